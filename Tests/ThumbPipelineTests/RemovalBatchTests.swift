import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// The watcher's `.removed` events remove index rows a batch at a time
/// (`ThumbnailPipeline+Removals`). Before: one transaction an event (an rm -rf of 10k assets:
/// 10k transactions, ~400 MB of WAL, 8–16 s beside a 100k index).
@Suite struct RemovalBatchTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    /// Workers paused, and the cache's reconcile held: it would drop these rows without files.
    func pausedPipeline() throws -> ThumbnailPipeline {
        try fixture.pipeline(paused: true) { $0.reconcileGate = ReconcileGate(held: true) }
    }

    @Test("300 removals in one watcher batch are one transaction; every row goes")
    func removalsOfOneBatchAreOneTransaction() throws {
        let pipeline = try pausedPipeline()
        defer { pipeline.shutdown() }
        let paths = (0..<300).map { "gone/\($0).jpg" }
        pipeline.stores.thumbnails.insertRowsForTesting(paths + ["kept.jpg"])
        let before = pipeline.stores.index.removalTransactions
        for path in paths { pipeline.follower.handleWatched(.removed(path: path)) }
        pipeline.follower.flushRemovals()
        #expect(pipeline.stores.index.removalTransactions - before == 1)
        #expect(pipeline.stores.thumbnails.assetPaths() == ["kept.jpg"])
        #expect(pipeline.metrics.watcherEvents == 300)
    }

    @Test("a batch is bounded: past removalBatch paths the rows go at once")
    func aBatchIsBounded() throws {
        let pipeline = try pausedPipeline()
        defer { pipeline.shutdown() }
        let count = AssetFollower.removalBatch + 10
        let paths = (0..<count).map { "gone/\($0).jpg" }
        pipeline.stores.thumbnails.insertRowsForTesting(paths)
        let before = pipeline.stores.index.removalTransactions
        for path in paths { pipeline.follower.handleWatched(.removed(path: path)) }
        #expect(pipeline.stores.index.removalTransactions - before == 1)
        #expect(pipeline.stores.thumbnails.assetPaths().count == 10)
        pipeline.follower.flushRemovals()
        #expect(pipeline.stores.thumbnails.assetPaths().isEmpty)
    }

    @Test("any other event sees the gathered rows gone first: a removed then re-added asset keeps its new rows")
    func anotherEventFlushesFirst() throws {
        let pipeline = try pausedPipeline()
        defer { pipeline.shutdown() }
        pipeline.stores.thumbnails.insertRowsForTesting(["a.jpg", "b.jpg"])
        pipeline.follower.handleWatched(.removed(path: "a.jpg"))
        #expect(Set(pipeline.stores.thumbnails.assetPaths()) == ["a.jpg", "b.jpg"])
        pipeline.follower.handleWatched(.removedFolder(path: "nothing-here"))
        #expect(pipeline.stores.thumbnails.assetPaths() == ["b.jpg"])
        // Rows written after the removal (the asset came back) are not taken by a later flush.
        pipeline.follower.handleWatched(.removed(path: "b.jpg"))
        pipeline.follower.flushRemovals()
        pipeline.stores.thumbnails.insertRowsForTesting(["b.jpg"])
        pipeline.follower.flushRemovals()
        #expect(pipeline.stores.thumbnails.assetPaths() == ["b.jpg"])
    }

    @Test("files deleted under a running watcher lose their thumbnails, rows and files")
    func deletedFilesUnderTheWatcherLoseEverything() async throws {
        let pipeline = try fixture.pipeline()
        let watcher = try pipeline.startWatching()
        defer {
            watcher.stop()
            pipeline.shutdown()
        }
        let names = fixture.imageNames
        for name in names {
            let answer = await pipeline.thumbnail(.init(assetPath: name, kind: PipelineFixture.avatar, scale: 3))
            #expect((try? answer.result.get()) != nil, "\(name): \(answer.result)")
        }
        #expect(pipeline.cacheStatistics.disk.entries == names.count)
        for name in names { try FileManager.default.removeItem(atPath: fixture.assets + "/" + name) }
        let deadline = ContinuousClock.now + .seconds(30)
        while pipeline.cacheStatistics.disk.entries > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(pipeline.cacheStatistics.disk.entries == 0 && pipeline.stores.thumbnails.assetPaths().isEmpty)
        pipeline.stores.index.reaper.waitUntilReaped()
        #expect(DiskCacheFixture.files(in: fixture.cache, countsRetired: true).isEmpty)
    }
}
