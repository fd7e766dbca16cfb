import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of a process whose pipeline is writing thumbnails; restarted on the same cache,
/// no partial or corrupt thumbnail is ever served and the index agrees with the files.
///
/// The child is `thumbd-crash-child pipeline ROOT` (Tests/CrashChild): it renders every asset of
/// ROOT/assets at `kinds` into ROOT/cache and creates ROOT/ready once one thumbnail is indexed.
@Suite struct PipelineCrashTests {
    /// The child's kinds (`PipelineWriter.kinds`), at its scale and disk budget.
    static func kinds() -> [SlotKind] {
        (1...40).map { (step: Int) -> SlotKind in
            let width = Double(40 + 7 * step), height = Double(40 + 5 * step)
            return SlotKind(name: "k\(step)", widthPoints: width, heightPoints: height, mode: .fill)
        }
    }
    static let scale = 2
    static let diskCacheBytes = 400_000

    @Test(.timeLimit(.minutes(2))) func killedWhileRenderingLeavesNothingCorrupt() async throws {
        let fixture = try PipelineFixture()
        let thumbnailer = Thumbnailer()
        // What a fresh render of each asset gives at each kind: the size a cached file must have.
        var expectedSizes: [String: [Int]] = [:]
        for asset in fixture.imageNames {
            let source = try SourceBytes.read(path: fixture.assets + "/" + asset, maxBytes: 1 << 24)
            for kind in Self.kinds() {
                let fresh = try thumbnailer.thumbnail(of: source, request: ThumbnailRequest(kind: kind, scale: Self.scale))
                expectedSizes[asset + "|" + kind.name] = [fresh.width, fresh.height]
            }
        }
        for round in 0..<5 {
            try? FileManager.default.removeItem(atPath: fixture.root + "/ready")
            let child = try CrashChildProcess(mode: "pipeline", target: fixture.root)
            try child.waitUntilReady(fixture.root + "/ready")
            // A blocking sleep, not Task.sleep: on a test run whose two cooperative threads are
            // held by blocking tests (CLI walks waiting on child processes), an awaited sleep
            // resumed after the child's own 30 s lifetime had run out (CI, round 4: exit 75).
            usleep(UInt32(Int.random(in: 30...400) * 1000))
            let (ending, wasRunning) = child.kill()
            #expect(wasRunning, "round \(round): the child \(ending) before it was killed: \(child.log)")
            #expect(ending == .signalled(SIGKILL), "round \(round): the child \(ending), not killed by SIGKILL: \(child.log)")

            let pipeline = try fixture.pipeline { $0.diskCacheBytes = Self.diskCacheBytes }
            // The files are reconciled with the index in the background: wait for it.
            pipeline.waitForBackgroundReconcile()
            let rows = pipeline.stores.thumbnails.indexRowsForTesting()
            let files = DiskCacheFixture.files(in: pipeline.stores.thumbnails.directory)
            #expect(!rows.isEmpty, "round \(round): the child indexed a thumbnail before it was killed; the reopened index has none")
            #expect(files == rows, "round \(round): index and files disagree")
            // Every file the index lists is a whole image.
            for relative in rows.keys {
                let source = try SourceBytes.read(path: pipeline.stores.thumbnails.directory + "/" + relative, maxBytes: 1 << 24)
                let probe = SlotKind(name: "probe", widthPoints: 4096, heightPoints: 4096)
                let decoded = try thumbnailer.render(source, request: ThumbnailRequest(kind: probe, scale: 1))
                #expect(decoded.warning == nil, "round \(round): \(relative) is damaged: \(decoded.warning ?? "")")
            }
            // Every indexed file is one of the child's thumbnails, and the restarted pipeline serves
            // each whole, at the size a fresh render has.
            let cached = fixture.imageNames.flatMap { asset in Self.kinds().map { (asset, $0) } }
                .filter { pipeline.isCached(assetPath: $0.0, kind: $0.1, scale: Self.scale) }
            #expect(cached.count == rows.count, "round \(round): \(rows.count) rows but \(cached.count) known thumbnails cached")
            let hitsBefore = pipeline.metrics.diskHits
            for (asset, kind) in cached {
                let answer = await pipeline.thumbnail(.init(assetPath: asset, kind: kind, scale: Self.scale))
                let thumbnail = try #require(answer.thumbnail, "round \(round): \(asset) at \(kind.name): \(String(describing: answer.error))")
                let decoded = try thumbnailer.render(SourceBytes(thumbnail.bytes), request: ThumbnailRequest(kind: kind, scale: Self.scale))
                #expect(decoded.warning == nil, "round \(round): \(asset) at \(kind.name): \(decoded.warning ?? "")")
                #expect([thumbnail.width, thumbnail.height] == expectedSizes[asset + "|" + kind.name],
                        "round \(round): \(asset) at \(kind.name) is \(thumbnail.width)×\(thumbnail.height)")
            }
            #expect(pipeline.metrics.diskHits - hitsBefore == cached.count, "round \(round): cached thumbnails were rendered again")
            pipeline.shutdown()
        }
    }
}
