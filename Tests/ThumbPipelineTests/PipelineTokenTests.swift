import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// The reused-cell contract: supersede, late older tokens, release.
@Suite struct PipelineTokenTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test func newRequestOnSlotSupersedesTheOlderOne() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        let cell = SlotID(client: "app", slot: "cell-1")
        let first = pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.avatar, scale: 3, slot: cell),
                                    completion: log.completion("first"))
        let second = pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.avatar, scale: 3, slot: cell),
                                     completion: log.completion("second"))
        #expect(first == 1)
        #expect(second == 2)
        // The older request is answered at once, before any work ran.
        #expect(log.response("first")?.error == .superseded(currentToken: 2))
        try pipeline.startWorkers()
        await log.wait(for: 2)
        let answer = try #require(log.response("second")?.thumbnail)
        #expect(answer.key.assetPath == "img1.jpg")
        #expect(answer.width == 144 && answer.height == 144)
        #expect(pipeline.metrics.renders == 1)   // the superseded job was dropped from the queue
        #expect(pipeline.metrics.droppedJobs == 1)
        pipeline.shutdown()
    }

    @Test func lateOlderTokenIsRefusedAtOnce() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        let cell = SlotID(client: "app", slot: "cell-9")
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, slot: cell, token: 5),
                        completion: log.completion("t5"))
        pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1, slot: cell, token: 3),
                        completion: log.completion("t3"))
        #expect(log.response("t3")?.error == .superseded(currentToken: 5))
        #expect(log.response("t3")?.token == 3)
        #expect(log.response("t5") == nil)
        try pipeline.startWorkers()
        await log.wait(for: 2)
        #expect(log.response("t5")?.thumbnail?.key.assetPath == "img0.jpg")
        pipeline.shutdown()
    }

    @Test func releasingASlotCancelsItsRequestAndItsWork() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        let cell = SlotID(client: "app", slot: "cell-2")
        pipeline.submit(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: cell), completion: log.completion("a"))
        pipeline.release(cell)
        #expect(log.response("a")?.error == .cancelled)
        try pipeline.startWorkers()
        // A later request on another asset proves the workers ran and skipped the dropped job.
        pipeline.submit(.init(assetPath: "img3.png", kind: PipelineFixture.large, scale: 1), completion: log.completion("b"))
        await log.wait(for: 2)
        #expect(log.response("b")?.thumbnail != nil)
        #expect(pipeline.metrics.renders == 1)
        #expect(pipeline.metrics.cancelled == 1)
        pipeline.shutdown()
    }

    @Test func cancellationReachesARunningDecode() async throws {
        try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/large-photos/exif-samples__mobile_jolla.jpg",
                                         toPath: fixture.assets + "/big.jpg")
        let cell = SlotID(client: "app", slot: "big")
        // At the decode's third checkpoint (two batches of rows decoded), the cell is reused:
        // the release lands mid-decode, and that same checkpoint must stop the work.
        let releaseOnce = Mutex<(@Sendable () -> Void)?>(nil)
        let checkpoints = Mutex(0)
        let configuration = fixture.configuration { $0.workers = 1 }
        #expect(configuration.worker == nil, "the checkpoints observed are the in-process decode's")
        let renderer = CheckpointObservingRenderer(configuration: configuration) {
            let count = checkpoints.withLock { count in
                count += 1
                return count
            }
            guard count == 3 else { return }
            releaseOnce.withLock { action in
                action?()
                action = nil
            }
        }
        let pipeline = try ThumbnailPipeline(configuration: configuration, startsWorkers: true, renderers: { _ in renderer })
        releaseOnce.withLock { $0 = { pipeline.release(cell) } }
        let xxl = SlotKind(name: "xxl", widthPoints: 2000, heightPoints: 2000)
        let answer = await pipeline.thumbnail(.init(assetPath: "big.jpg", kind: xxl, scale: 1, slot: cell))
        #expect(answer.error == .cancelled)
        while pipeline.metrics.renders == 0 { try await Task.sleep(for: .milliseconds(2)) }
        let metrics = pipeline.metrics
        #expect(metrics.abortedRenders == 1)
        #expect(metrics.wastedCPUSeconds > 0)
        // Stopped there, not after the other ~150 row batches.
        #expect(checkpoints.withLock { $0 } == 3)
        pipeline.shutdown()
    }

    @Test func sameAssetAgainOnTheSameSlotKeepsItsJob() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        let log = AnswerLog()
        let cell = SlotID(client: "app", slot: "again")
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, slot: cell), completion: log.completion("1"))
        pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, slot: cell), completion: log.completion("2"))
        #expect(log.response("1")?.error == .superseded(currentToken: 2))
        try pipeline.startWorkers()
        await log.wait(for: 2)
        #expect(log.response("2")?.thumbnail != nil)
        #expect(pipeline.metrics.droppedJobs == 0)
        #expect(pipeline.metrics.renders == 1)
        pipeline.shutdown()
    }

    @Test func slotStateIsBounded() async throws {
        let pipeline = try fixture.pipeline { $0.maxSlots = 100 }
        for index in 0..<1_000 {
            _ = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1,
                                               slot: SlotID(client: "greedy", slot: "s\(index)")))
        }
        #expect(pipeline.metrics.liveSlots <= 100)
        pipeline.shutdown()
    }
}
