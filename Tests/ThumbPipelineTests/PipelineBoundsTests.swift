import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Issue 8, items 2, 8 and 10 at the pipeline: tokens cannot overflow, the slot table is
/// bounded in bytes, and prefetch or batch work cannot take the queue room visible requests need.
@Suite struct PipelineBoundsTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test("a token of UInt64.max or 2^53 - 1 on a new slot: refused tokenTooFar, no overflow, the slot keeps working")
    func tokenAtTheTopDoesNotOverflow() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let cell = SlotID(client: "app", slot: "top")
        // On 31927a0 a slot at UInt64.max overflowed (`current + 1`); on b259acf it was taken and
        // pinned the slot. Now a claim moves a token by at most `SlotToken.maximumStep`.
        let first = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: cell, token: .max))
        #expect(first.error == .tokenTooFar(currentToken: 0), "\(String(describing: first.error))")
        let next = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: cell))
        #expect(next.thumbnail != nil && next.token == 1, "\(String(describing: next.token))")
        let edge = SlotID(client: "app", slot: "edge")
        let far = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: edge,
                                                 token: SlotToken.maximum - 1))
        #expect(far.error == .tokenTooFar(currentToken: 0))
        let stepped = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: edge,
                                                     token: SlotToken.maximumStep))
        #expect(stepped.thumbnail != nil && stepped.token == SlotToken.maximumStep)
        let late = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: edge, token: 7))
        #expect(late.error == .superseded(currentToken: SlotToken.maximumStep))
        // Slots of different owners are different slots: the same client and slot names do not meet.
        let other = SlotID(owner: "uid:1000", client: "app", slot: "edge")
        let own = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: other, token: 7))
        #expect(own.thumbnail != nil && own.token == 7)
    }

    @Test("the slot table is bounded in bytes, not only in count")
    func slotTableIsBoundedInBytes() async throws {
        let budget = 64 << 10
        let pipeline = try fixture.pipeline { $0.maxSlotTableBytes = budget }
        defer { pipeline.shutdown() }
        let longID = String(repeating: "s", count: 240)
        for index in 0..<1_000 {
            // Answered at once (no such asset), but each still takes over its cell.
            _ = await pipeline.thumbnail(.init(assetPath: "missing.jpg", kind: PipelineFixture.large, scale: 1,
                                               slot: SlotID(client: "greedy", slot: "\(index)-" + longID)))
        }
        let slots = pipeline.metrics.liveSlots
        let perSlot = "greedy".utf8.count + "0-".utf8.count + longID.utf8.count + 192 // the least a slot is charged
        // On 31927a0 all 1,000 stay (the count bound is 100,000): about 430 KB of ids.
        #expect(slots > 0 && slots * perSlot <= budget, "\(slots) slots of ~\(perSlot) bytes in a \(budget)-byte table")
        let fresh = await pipeline.thumbnail(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1,
                                                   slot: SlotID(client: "app", slot: "cell-1")))
        #expect(fresh.thumbnail != nil, "a new slot still fits: \(String(describing: fresh.error))")
    }

    @Test("prefetch and batch jobs leave a quarter of the queue to visible requests")
    func visibleRequestsKeepTheirQueueRoom() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.maxQueuedJobs = 8 }
        let kinds = (1...5).map { SlotKind(name: "k\($0)", widthPoints: Double(16 * $0), heightPoints: Double(16 * $0)) }
        var accepted = 0
        for name in fixture.imageNames {
            for kind in kinds where pipeline.prerender(assetPath: name, kind: kind, scale: 1, priority: .prefetch) { accepted += 1 }
        }
        #expect(accepted == 6, "prefetch took \(accepted) of 8 queue places")
        #expect(!pipeline.prerender(assetPath: fixture.imageNames[0], kind: PipelineFixture.avatar, scale: 3, priority: .batch))
        let log = AnswerLog()
        // On 31927a0 prefetch filled all 8 places and these were refused `overloaded` (503).
        for (index, name) in fixture.imageNames.prefix(2).enumerated() {
            pipeline.submit(.init(assetPath: name, kind: PipelineFixture.avatar, scale: 3), completion: log.completion("visible\(index)"))
        }
        pipeline.submit(.init(assetPath: fixture.imageNames[2], kind: PipelineFixture.avatar, scale: 3), completion: log.completion("over"))
        #expect(log.response("over")?.error == .overloaded, "the queue itself stays bounded")
        #expect(log.response("visible0") == nil && log.response("visible1") == nil, "visible requests were refused: \(log.all)")
        try pipeline.startWorkers()
        await log.wait(for: 3)
        #expect(log.response("visible0")?.thumbnail != nil && log.response("visible1")?.thumbnail != nil)
        pipeline.shutdown()
    }
}
