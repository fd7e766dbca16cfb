import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// The folder watcher driving the pipeline: pre-render on arrival, invalidate on change and delete.
@Suite struct PipelineWatchingTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test func reconcileAtStartThenFollowTheFolder() async throws {
        let pipeline = try fixture.pipeline { $0.pregenerated = [(PipelineFixture.avatar, 3)] }
        let watcher = try pipeline.startWatching()
        defer {
            watcher.stop()
            pipeline.shutdown()
        }
        // At start: every decodable asset is pre-rendered, the broken one remembered as failed.
        let images = fixture.imageNames.count
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images })
        #expect(await eventually { pipeline.metrics.renders == images + 1 })

        // A new asset arrives (written elsewhere, renamed in): pre-rendered.
        try FileManager.default.copyItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.root + "/incoming.jpg")
        try FileManager.default.moveItem(atPath: fixture.root + "/incoming.jpg", toPath: fixture.assets + "/sub/new.jpg")
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images + 1 })
        let newKeyAnswer = await pipeline.thumbnail(.init(assetPath: "sub/new.jpg", kind: PipelineFixture.avatar, scale: 3))
        #expect(pipeline.metrics.diskHits + pipeline.metrics.memoryHits >= 1)
        let old = try #require(newKeyAnswer.thumbnail)

        // It changes: the old thumbnail goes at once, the new version is pre-rendered.
        try FileManager.default.copyItem(atPath: fixture.assets + "/img5.jpg", toPath: fixture.root + "/replacement.jpg")
        try FileManager.default.removeItem(atPath: fixture.assets + "/sub/new.jpg")
        try FileManager.default.moveItem(atPath: fixture.root + "/replacement.jpg", toPath: fixture.assets + "/sub/new.jpg")
        #expect(await eventually { !FileManager.default.fileExists(atPath: old.filePath) })
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images + 1 })

        // It is deleted: its thumbnails go.
        try FileManager.default.removeItem(atPath: fixture.assets + "/sub/new.jpg")
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images })
        #expect(pipeline.metrics.watcherEvents >= 3)
    }

    @Test func reconcileDropsThumbnailsOfAssetsDeletedWhileStopped() async throws {
        var pipeline = try fixture.pipeline { $0.pregenerated = [(PipelineFixture.large, 1)] }
        var watcher = try pipeline.startWatching()
        let images = fixture.imageNames.count
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images })
        watcher.stop()
        pipeline.shutdown()
        try FileManager.default.removeItem(atPath: fixture.assets + "/img0.jpg")
        pipeline = try fixture.pipeline { $0.pregenerated = [(PipelineFixture.large, 1)] }
        watcher = try pipeline.startWatching()
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images - 1 })
        // Nothing else was rendered again: the cache survived the restart.
        #expect(pipeline.metrics.renders == 0)
        watcher.stop()
        pipeline.shutdown()
    }

    /// Issue 8 item 12, through the pipeline: the root moved away and back is watched again —
    /// a new file is pre-rendered, a deleted one loses its thumbnails — and nothing was dropped
    /// while it was away (a missing root says nothing about its assets).
    @Test func rootMovedAwayAndBackIsFollowedAgain() async throws {
        let capture = LogCapture()
        let pipeline = try fixture.pipeline {
            $0.pregenerated = [(PipelineFixture.large, 1)]
            $0.rootPollSeconds = 0.05
            $0.log = capture.log
        }
        let watcher = try pipeline.startWatching()
        defer {
            watcher.stop()
            pipeline.shutdown()
        }
        let images = fixture.imageNames.count
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images })
        try FileManager.default.moveItem(atPath: fixture.assets, toPath: fixture.root + "/away")
        #expect(await eventually { capture.count(.warning, "was moved away") == 1 }, "\(capture.text)")
        let away = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(away.error == .notFound(path: "img0.jpg"))
        #expect(pipeline.cacheStatistics.disk.entries == images)

        try FileManager.default.moveItem(atPath: fixture.root + "/away", toPath: fixture.assets)
        #expect(await eventually { capture.count(.notice, "is back") == 1 }, "\(capture.text)")
        try FileManager.default.copyItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.root + "/incoming.jpg")
        try FileManager.default.moveItem(atPath: fixture.root + "/incoming.jpg", toPath: fixture.assets + "/sub/new.jpg")
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images + 1 })
        try FileManager.default.removeItem(atPath: fixture.assets + "/img1.jpg")
        #expect(await eventually { pipeline.cacheStatistics.disk.entries == images })
        #expect(capture.count(.warning, "") == 1, "one warning for the whole episode: \(capture.text)")
    }
}
