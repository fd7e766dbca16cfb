import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Issue 24: one cold miss took the pipeline's lock six times (submit, the worker's pop, the
/// decode order's look at the job records, the placeholder counter, the finish, the delivery
/// gate's check). Now submit hands the job to an idle render thread in its own hold, and the
/// thread's finish answers, checks the slot's bytes and takes its next group in one.
@Suite(.serialized) struct PipelineLockTests {
    let fixture: PipelineFixture

    init() throws {
        fixture = try PipelineFixture()
    }

    /// A pipeline whose render thread waits for work and whose background start-up is over:
    /// nothing but the request under test takes the lock.
    func quietPipeline() async throws -> ThumbnailPipeline {
        let pipeline = try fixture.pipeline { $0.workers = 1 }
        pipeline.waitForBackgroundReconcile()
        #expect(await eventually { pipeline.state.withLock { $0.idleRenderThreads } == 1 })
        return pipeline
    }

    @Test("a cold miss for a slot takes the pipeline's lock at most twice, and answers the thumbnail")
    func coldMissForASlot() async throws {
        let pipeline = try await quietPipeline()
        defer { pipeline.shutdown() }
        let before = pipeline.state.holdCount
        let answer = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1,
                                                    slot: SlotID(client: "app", slot: "cell-1")))
        let holds = pipeline.state.holdCount - before
        let thumbnail = try #require(answer.thumbnail, "\(answer.result)")
        #expect(max(thumbnail.width, thumbnail.height) == 256)
        #expect((1...2).contains(holds), "\(holds) holds of the pipeline's lock for one miss")
        // The decode was the version's first and read the whole frame: it computed the
        // placeholder, counted in the finish's hold.
        #expect(pipeline.metrics.placeholdersComputed == 1)
    }

    @Test("a cold miss without a slot, and a memory hit for a slot, take it at most twice too")
    func missWithoutSlotAndHitForSlot() async throws {
        let pipeline = try await quietPipeline()
        defer { pipeline.shutdown() }
        var before = pipeline.state.holdCount
        let miss = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1))
        #expect(miss.thumbnail != nil, "\(miss.result)")
        #expect((1...2).contains(pipeline.state.holdCount - before))

        before = pipeline.state.holdCount
        let hit = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1,
                                                 slot: SlotID(client: "app", slot: "cell-2")))
        #expect(hit.thumbnail?.bytes == miss.thumbnail?.bytes)
        #expect((1...2).contains(pipeline.state.holdCount - before))
    }

    @Test("work queued while the render thread is busy is taken in the hold that finishes the last")
    func busyThreadTakesTheNextGroupInItsFinish() async throws {
        let pipeline = try await quietPipeline()
        defer { pipeline.shutdown() }
        let before = pipeline.state.holdCount
        let names = fixture.imageNames
        let answers = await withTaskGroup(of: PipelineResponse.self) { group in
            for name in names {
                group.addTask { await pipeline.thumbnail(.init(assetPath: name, kind: PipelineFixture.large, scale: 1)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.thumbnail != nil })
        // One hold per submit and one per finish (which also takes the next group), whatever the order.
        #expect(pipeline.state.holdCount - before <= 2 * names.count, "\(pipeline.state.holdCount - before) holds for \(names.count) misses")
    }
}
