import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Hits on versions the folder watcher vouches for: no look at the file, and never an old
/// thumbnail once the watcher has reported a change.
@Suite struct PipelineVouchingTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    static let large = PipelineFixture.large

    func ask(_ pipeline: ThumbnailPipeline, _ path: String) async -> PipelineResponse {
        await pipeline.thumbnail(.init(assetPath: path, kind: Self.large, scale: 1))
    }

    /// Renders `path`, then hits it once through a resolve (which vouches): the next hit is vouched.
    func vouch(_ pipeline: ThumbnailPipeline, _ path: String) async throws -> CachedThumbnail {
        let rendered = try #require(await ask(pipeline, path).thumbnail)
        let hit = try #require(await ask(pipeline, path).thumbnail)
        #expect(hit.etag == rendered.etag)
        return hit
    }

    @Test func aHitOnAVouchedAssetLooksAtNoFile() async throws {
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); pipeline.shutdown() }
        let first = try await vouch(pipeline, "img0.jpg")
        let before = pipeline.metrics
        #expect(before.vouchedAssets == 1)
        for _ in 0..<5 { #expect(try #require(await ask(pipeline, "img0.jpg").thumbnail).etag == first.etag) }
        let after = pipeline.metrics
        #expect(after.assetResolves == before.assetResolves, "a vouched hit resolved its asset")
        #expect(after.vouchedHits == before.vouchedHits + 5 && after.memoryHits == before.memoryHits + 5)
        // Another variant of the same asset is not vouched until it was hit once.
        _ = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.avatar, scale: 3))
        #expect(pipeline.metrics.assetResolves == after.assetResolves + 1)
    }

    @Test func withoutAWatcherEveryRequestLooksAtItsFile() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        _ = try await vouch(pipeline, "img0.jpg")
        let before = pipeline.metrics
        _ = await ask(pipeline, "img0.jpg")
        #expect(pipeline.metrics.assetResolves == before.assetResolves + 1 && pipeline.metrics.vouchedHits == 0)
        #expect(pipeline.metrics.vouchedAssets == 0)
    }

    @Test func aRewrittenFileIsNeverServedItsOldThumbnailOnceTheEventWasHandled() async throws {
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); pipeline.shutdown() }
        let old = try await vouch(pipeline, "img0.jpg")
        #expect(pipeline.metrics.vouchedAssets == 1)
        let events = pipeline.metrics.watcherEvents
        // Rewritten in place (same inode), then closed: IN_CLOSE_WRITE.
        let other = try Data(contentsOf: URL(fileURLWithPath: fixture.assets + "/img4.jpg"))
        let handle = try #require(FileHandle(forWritingAtPath: fixture.assets + "/img0.jpg"))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: other)
        try handle.close()
        #expect(await eventually { pipeline.metrics.watcherEvents > events })
        let resolves = pipeline.metrics.assetResolves
        let fresh = try #require(await ask(pipeline, "img0.jpg").thumbnail)
        #expect(fresh.etag != old.etag && fresh.bytes != old.bytes)
        #expect(pipeline.metrics.assetResolves == resolves + 1)
    }

    @Test func anEventBetweenTheResolveAndTheVouchLeavesNoVouch() async throws {
        // Rendered into the disk cache by an earlier daemon: the next one's first request is a
        // disk hit, which it puts in memory after the lookup, then vouches for.
        let earlier = try fixture.pipeline()
        _ = try #require(await ask(earlier, "img1.jpg").thumbnail)
        earlier.shutdown()
        let owner = Mutex<ThumbnailPipeline?>(nil)
        let fired = Atomic<Int>(0)
        // The hook runs after the request's fstat and disk lookup, before its vouch: the watcher's
        // event for the asset is handled right there (as if the file had changed just after the
        // fstat). The event's invalidation finds nothing in memory yet; the request then puts the
        // row it read in memory and would vouch for a version the event made doubtful.
        let pipeline = try ThumbnailPipeline(configuration: fixture.configuration(), startsWorkers: true, resolvedHook: { version in
            guard version.path == "img1.jpg", fired.add(1, ordering: .relaxed).newValue == 1 else { return }
            owner.withLock { $0 }?.follower.handle(.changed(path: "img1.jpg"))
        })
        owner.withLock { $0 = pipeline }
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); owner.withLock { $0 = nil }; pipeline.shutdown() }
        _ = try #require(await ask(pipeline, "img1.jpg").thumbnail)
        #expect(pipeline.metrics.diskHits == 1)
        #expect(fired.load(ordering: .relaxed) == 1)
        #expect(pipeline.metrics.vouchedAssets == 0, "a vouch taken across the event")
        let resolves = pipeline.metrics.assetResolves
        _ = await ask(pipeline, "img1.jpg")
        #expect(pipeline.metrics.assetResolves == resolves + 1, "the next request did not look at the file")
    }

    @Test func aFolderRemovedOrRenamedDropsItsVouchesAndOnlyThose() async throws {
        try FileManager.default.copyItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.assets + "/sub/a.jpg")
        try FileManager.default.createDirectory(atPath: fixture.assets + "/gone/deeper", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.assets + "/img2.png", toPath: fixture.assets + "/gone/deeper/b.png")
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); pipeline.shutdown() }
        for path in ["sub/a.jpg", "gone/deeper/b.png", "img3.png"] { _ = try await vouch(pipeline, path) }
        #expect(pipeline.metrics.vouchedAssets == 3)
        // Renamed away (out of the root): IN_MOVED_FROM of a folder.
        try FileManager.default.moveItem(atPath: fixture.assets + "/sub", toPath: fixture.root + "/sub-away")
        #expect(await eventually { pipeline.metrics.vouchedAssets == 2 })
        try FileManager.default.removeItem(atPath: fixture.assets + "/gone")
        #expect(await eventually { pipeline.metrics.vouchedAssets == 1 })
        #expect(await ask(pipeline, "sub/a.jpg").error == .notFound(path: "sub/a.jpg"))
        let resolves = pipeline.metrics.assetResolves
        _ = await ask(pipeline, "img3.png")
        #expect(pipeline.metrics.assetResolves == resolves, "the vouch of an asset elsewhere stays")
    }

    @Test func lostEventsAndAStoppedWatcherDropEveryVouch() async throws {
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); pipeline.shutdown() }
        for path in ["img0.jpg", "img2.png"] { _ = try await vouch(pipeline, path) }
        #expect(pipeline.metrics.vouchedAssets == 2)
        pipeline.follower.handle(.rescan) // what an inotify queue overflow reports
        #expect(pipeline.metrics.vouchedAssets == 0)
        _ = await ask(pipeline, "img0.jpg") // resolves, vouches again
        #expect(pipeline.metrics.vouchedAssets == 1)
        watcher.stop()
        let resolves = pipeline.metrics.assetResolves
        _ = await ask(pipeline, "img0.jpg")
        #expect(pipeline.metrics.assetResolves == resolves + 1, "a stopped watcher vouches for nothing")
        #expect(pipeline.metrics.vouchedAssets == 0)
    }

    @Test func aHardLinkedOrSymlinkedAssetIsNotVouchedFor() async throws {
        try FileManager.default.linkItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.assets + "/sub/linked.jpg")
        try FileManager.default.createSymbolicLink(atPath: fixture.assets + "/alias.jpg", withDestinationPath: "img2.png")
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer { watcher.stop(); pipeline.shutdown() }
        for path in ["img0.jpg", "alias.jpg"] {
            _ = try #require(await ask(pipeline, path).thumbnail)
            let resolves = pipeline.metrics.assetResolves
            for _ in 0..<2 { _ = try #require(await ask(pipeline, path).thumbnail) }
            #expect(pipeline.metrics.assetResolves == resolves + 2, "\(path) was vouched for")
        }
        #expect(pipeline.metrics.vouchedAssets == 0)
    }
}
