import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Coalescing, priority order, the queue bound, negative entries, invalidation, restarts.
@Suite struct PipelineSchedulingTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test func identicalRequestsDecodeOnce() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        for index in 0..<20 {
            pipeline.submit(.init(assetPath: "img5.jpg", kind: PipelineFixture.avatar, scale: 3,
                                  priority: index % 2 == 0 ? .visible : .prefetch), completion: log.completion("\(index)"))
        }
        #expect(pipeline.prerender(assetPath: "img5.jpg", kind: PipelineFixture.avatar, scale: 3))
        try pipeline.startWorkers()
        await log.wait(for: 20)
        #expect(log.all.count == 20)
        let digests = Set(log.all.compactMap { $0.response.thumbnail?.key.digest })
        #expect(digests.count == 1)
        #expect(pipeline.metrics.renders == 1)
        #expect(pipeline.metrics.coalesced == 20)
        pipeline.shutdown()
    }

    @Test func visibleBeforePrefetchBeforeBatchNewestVisibleFirst() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.workers = 1 }
        let log = AnswerLog()
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, priority: .batch), completion: log.completion("batch"))
        pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1, priority: .prefetch), completion: log.completion("prefetch-1"))
        pipeline.submit(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, priority: .visible), completion: log.completion("visible-old"))
        pipeline.submit(.init(assetPath: "img3.png", kind: PipelineFixture.large, scale: 1, priority: .prefetch), completion: log.completion("prefetch-2"))
        pipeline.submit(.init(assetPath: "img4.jpg", kind: PipelineFixture.large, scale: 1, priority: .visible), completion: log.completion("visible-new"))
        try pipeline.startWorkers()
        await log.wait(for: 5)
        #expect(log.all.map(\.tag) == ["visible-new", "visible-old", "prefetch-1", "prefetch-2", "batch"])
        pipeline.shutdown()
    }

    @Test func aVisibleWaiterRaisesABatchJob() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.workers = 1 }
        let log = AnswerLog()
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, priority: .prefetch), completion: log.completion("prefetch"))
        #expect(pipeline.prerender(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1))
        pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1, priority: .visible), completion: log.completion("visible"))
        try pipeline.startWorkers()
        await log.wait(for: 2)
        #expect(log.all.map(\.tag) == ["visible", "prefetch"])
        #expect(pipeline.metrics.renders == 2)
        pipeline.shutdown()
    }

    @Test func aFullQueueRefusesNewJobsButNotCoalescedOnes() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.maxQueuedJobs = 3 }
        let log = AnswerLog()
        for index in 0..<3 {
            pipeline.submit(.init(assetPath: fixture.imageNames[index], kind: PipelineFixture.large, scale: 1), completion: log.completion("\(index)"))
        }
        pipeline.submit(.init(assetPath: fixture.imageNames[3], kind: PipelineFixture.large, scale: 1), completion: log.completion("over"))
        #expect(log.response("over")?.error == .overloaded)
        pipeline.submit(.init(assetPath: fixture.imageNames[0], kind: PipelineFixture.large, scale: 1), completion: log.completion("joined"))
        #expect(log.response("joined") == nil)
        try pipeline.startWorkers()
        await log.wait(for: 5)
        #expect(log.response("joined")?.thumbnail != nil)
        pipeline.shutdown()
    }

    @Test func aBrokenAssetIsRememberedUntilItChanges() async throws {
        let pipeline = try fixture.pipeline()
        let first = await pipeline.thumbnail(.init(assetPath: "broken.jpg", kind: PipelineFixture.large, scale: 1))
        guard case .undecodable = first.error else { Issue.record("expected undecodable, got \(String(describing: first.error))"); return }
        let second = await pipeline.thumbnail(.init(assetPath: "broken.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(second.error == first.error)
        #expect(pipeline.metrics.renders == 1)
        #expect(pipeline.metrics.negativeHits == 1)
        // A fixed upload (a new version) is tried again.
        try FileManager.default.removeItem(atPath: fixture.assets + "/broken.jpg")
        try FileManager.default.copyItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.assets + "/broken.jpg")
        let third = await pipeline.thumbnail(.init(assetPath: "broken.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(third.thumbnail != nil)
        #expect(pipeline.metrics.renders == 2)
        pipeline.shutdown()
    }

    @Test func refusedPathsAndMissingAssets() async throws {
        let pipeline = try fixture.pipeline()
        let outside = await pipeline.thumbnail(.init(assetPath: "../cache/index.sqlite", kind: PipelineFixture.large, scale: 1))
        guard case .forbidden = outside.error else { Issue.record("expected forbidden, got \(String(describing: outside.error))"); return }
        let missing = await pipeline.thumbnail(.init(assetPath: "nope.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(missing.error == .notFound(path: "nope.jpg"))
        #expect(pipeline.metrics.renders == 0)
        pipeline.shutdown()
    }

    @Test func aChangedFileGetsANewThumbnailAndTheOldOneGoes() async throws {
        let pipeline = try fixture.pipeline()
        let before = try #require(await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)).thumbnail)
        try FileManager.default.removeItem(atPath: fixture.assets + "/img0.jpg")
        try FileManager.default.copyItem(atPath: fixture.assets + "/img5.jpg", toPath: fixture.assets + "/img0.jpg")
        let after = try #require(await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)).thumbnail)
        #expect(before.key != after.key)
        #expect(before.bytes != after.bytes)
        pipeline.invalidate(assetPath: "img0.jpg")
        #expect(!FileManager.default.fileExists(atPath: before.filePath))
        #expect(!FileManager.default.fileExists(atPath: after.filePath))
        pipeline.shutdown()
    }

    @Test func aRestartReusesTheDiskCache() async throws {
        var first = try fixture.pipeline()
        let rendered = try #require(await first.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.avatar, scale: 3)).thumbnail)
        first.shutdown()
        first = try fixture.pipeline()
        let again = try #require(await first.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.avatar, scale: 3)).thumbnail)
        #expect(again.bytes == rendered.bytes)
        #expect(first.metrics.renders == 0)
        #expect(first.metrics.diskHits == 1)
        let hit = try #require(await first.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.avatar, scale: 3)).thumbnail)
        #expect(hit.etag == rendered.etag)
        #expect(first.metrics.memoryHits == 1)
        first.shutdown()
    }

    @Test func memoryCacheEvictsLeastRecentlyUsedUnderItsBudget() throws {
        func entry(_ name: String) -> CachedThumbnail {
            let key = CacheKey(asset: AssetVersion(path: name, size: 1, modifiedNanoseconds: 1, inode: 1, device: 1),
                               kind: PipelineFixture.large, scale: 1, encoder: EncoderSettings())
            return CachedThumbnail(key: key, bytes: [UInt8](repeating: 7, count: 100), filePath: "/x/\(name)", format: .jpeg, width: 1, height: 1)
        }
        let (a, b, c) = (entry("a"), entry("b"), entry("c"))
        // The budget counts each entry's overhead too: room for two entries, not three.
        let probe = MemoryCache(byteBudget: 1 << 30)
        probe.insert(a)
        probe.insert(b)
        let two = probe.statistics.bytes
        probe.insert(c)
        let three = probe.statistics.bytes
        #expect(two > 200 && three > two)
        let cache = MemoryCache(byteBudget: (two + three) / 2)
        cache.insert(a)
        cache.insert(b)
        #expect(cache.thumbnail(for: a.key) != nil) // a is now newer than b
        cache.insert(c)
        #expect(cache.thumbnail(for: b.key) == nil)
        #expect(cache.thumbnail(for: a.key) != nil)
        #expect(cache.thumbnail(for: c.key) != nil)
        #expect(cache.statistics.entries == 2 && cache.statistics.bytes <= (two + three) / 2)
        cache.removeThumbnails(ofAsset: "a")
        #expect(cache.statistics.entries == 1)
    }

    @Test func shutdownAnswersQueuedRequests() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1), completion: log.completion("queued"))
        pipeline.shutdown()
        #expect(log.response("queued")?.error == .shuttingDown)
        let late = await pipeline.thumbnail(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(late.error == .shuttingDown)
    }
}
