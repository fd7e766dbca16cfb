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
/// The child is this test binary again, running `renderingChild` with `THUMBD_PIPELINE_CRASH_ROOT`
/// set (without it, that test does nothing).
@Suite struct PipelineCrashTests {
    static let environmentKey = "THUMBD_PIPELINE_CRASH_ROOT"

    static func kinds() -> [SlotKind] {
        (1...40).map { (step: Int) -> SlotKind in
            let width = Double(40 + 7 * step), height = Double(40 + 5 * step)
            return SlotKind(name: "k\(step)", widthPoints: width, heightPoints: height, mode: .fill)
        }
    }

    @Test func renderingChild() async throws {
        guard let root = ProcessInfo.processInfo.environment[Self.environmentKey] else { return }
        let fixture = PipelineFixture(existingRoot: root)
        let pipeline = try fixture.pipeline { $0.diskCacheBytes = 400_000 } // small: eviction runs too
        _ = FileManager.default.createFile(atPath: root + "/ready", contents: nil)
        let deadline = ContinuousClock.now + .seconds(30) // never outlive a parent that died
        while ContinuousClock.now < deadline {
            for kind in Self.kinds() {
                for asset in fixture.imageNames { pipeline.prerender(assetPath: asset, kind: kind, scale: 2) }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test(.timeLimit(.minutes(2))) func killedWhileRenderingLeavesNothingCorrupt() async throws {
        let fixture = try PipelineFixture()
        let executable = try #require(Self.testExecutable())
        for round in 0..<5 {
            try? FileManager.default.removeItem(atPath: fixture.root + "/ready")
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "renderingChild"]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.environmentKey] = fixture.root
            child.environment = environment
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()
            let start = ContinuousClock.now
            while !FileManager.default.fileExists(atPath: fixture.root + "/ready") && child.isRunning
                    && ContinuousClock.now - start < .seconds(20) {
                try await Task.sleep(for: .milliseconds(2))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...400)))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            #expect(child.terminationReason == .uncaughtSignal, "round \(round): the child was not killed mid-run")

            let pipeline = try fixture.pipeline { $0.diskCacheBytes = 400_000 }
            let rows = pipeline.disk.indexRowsForTesting()
            let files = DiskCacheFixture.files(in: pipeline.disk.directory)
            #expect(files == rows, "round \(round): index and files disagree")
            // Every file the index lists is a whole image of a size some kind asks for.
            let thumbnailer = Thumbnailer()
            for relative in rows.keys {
                let source = try SourceBytes.read(path: pipeline.disk.directory + "/" + relative, maxBytes: 1 << 24)
                let probe = SlotKind(name: "probe", widthPoints: 4096, heightPoints: 4096)
                let decoded = try thumbnailer.render(source, request: ThumbnailRequest(kind: probe, scale: 1))
                #expect(decoded.warning == nil, "round \(round): \(relative) is damaged: \(decoded.warning ?? "")")
            }
            // And what the restarted pipeline serves is whole: ask for a sample of what was cached.
            for kind in Self.kinds().prefix(6) {
                let answer = await pipeline.thumbnail(.init(assetPath: fixture.imageNames[0], kind: kind, scale: 2))
                let thumbnail = try #require(answer.thumbnail)
                let decoded = try thumbnailer.render(SourceBytes(thumbnail.bytes), request: ThumbnailRequest(kind: kind, scale: 2))
                #expect(decoded.warning == nil)
                #expect(thumbnail.width == kind.pixelSize(scale: 2).width || thumbnail.width <= 1800)
            }
            pipeline.shutdown()
        }
    }

    static func testExecutable() -> String? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    }
}
