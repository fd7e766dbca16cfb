import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Issue 8 item 13 in the pipeline: with the cache folder removed, answers come from memory, no
/// answer names a file that is not there, the folder comes back, and the episode is one warning.
@Suite struct PipelineCacheWriteTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test("a removed cache folder: served from memory, never a path to nothing, recreated, logged once")
    func removedCacheFolder() async throws {
        let capture = LogCapture()
        let pipeline = try fixture.pipeline { $0.log = capture.log }
        defer { pipeline.shutdown() }
        let request = PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)
        let first = try #require(await pipeline.thumbnail(request).thumbnail)
        #expect(first.isStored && pipeline.storedFilePath(of: first) == first.filePath)

        try FileManager.default.removeItem(atPath: fixture.cache)
        // The memory cache still has it; its file is gone: no path (and it is written again).
        let again = try #require(await pipeline.thumbnail(request).thumbnail)
        #expect(again.bytes == first.bytes)
        #expect(pipeline.storedFilePath(of: again) == nil)
        #expect(await eventually {
            guard let hit = await pipeline.thumbnail(request).thumbnail, let path = pipeline.storedFilePath(of: hit) else { return false }
            return (try? Data(contentsOf: URL(fileURLWithPath: path))) == Data(first.bytes)
        })
        // New renders land in the recreated folder.
        let other = try #require(await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1)).thumbnail)
        #expect(other.isStored)
        let otherPath = try #require(pipeline.storedFilePath(of: other))
        #expect((try? Data(contentsOf: URL(fileURLWithPath: otherPath))) == Data(other.bytes))
        for name in fixture.imageNames { _ = await pipeline.thumbnail(.init(assetPath: name, kind: PipelineFixture.avatar, scale: 3)) }
        #expect(capture.count(.warning, "was removed: recreated it") == 1, "\(capture.text)")
        #expect(capture.count(.warning, "") == 1, "\(capture.text)")
    }

    /// A thumbnail rendered while the cache could not store it is marked so, and its path is
    /// never handed out even if a file of that name turns up later with other bytes.
    @Test("an unstored thumbnail has no stored path")
    func unstoredThumbnailHasNoPath() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        var thumbnail = try #require(await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)).thumbnail)
        #expect(thumbnail.storedFilePath == thumbnail.filePath)
        thumbnail.isStored = false
        #expect(thumbnail.storedFilePath == nil)
        thumbnail.isStored = true
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: thumbnail.filePath)) // not these bytes' size
        #expect(thumbnail.storedFilePath == nil)
    }
}
