import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Completions run outside the pipeline's lock (issue 9): a completion may read the metrics or
/// submit another request — on its own slot or another — without hanging anything. Until
/// completions moved out, each of these deadlocked (the completion ran under the lock it asked
/// for). Every wait here is bounded so that a regression fails instead of hanging; a pipeline
/// whose threads are stuck is left alone rather than shut down (shutdown would wait for them).
@Suite struct PipelineReentrancyTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test("a completion may read the metrics: it runs outside the lock, after the bookkeeping")
    func completionReadsMetrics() async throws {
        let pipeline = try fixture.pipeline()
        let seen = Arrivals()
        // A render (answered from a worker thread), then a memory hit (answered on the
        // submitting thread). Submitted from threads of their own: a deadlock stays there.
        Thread {
            pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)) { response in
                seen.record("render", pipeline.metrics.renders, response)
            }
        }.start()
        let rendered = await seen.wait(for: 1)
        #expect(rendered, "the render's completion never returned from `metrics`")
        guard rendered else { return }
        Thread {
            pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1)) { response in
                seen.record("hit", pipeline.metrics.memoryHits, response)
            }
        }.start()
        let hit = await seen.wait(for: 2)
        #expect(hit, "the cache hit's completion never returned from `metrics`")
        guard hit else { return }
        // The counters are updated before the answer goes out: the completion sees its own render and hit.
        #expect(seen.value("render") == 1 && seen.response("render")?.thumbnail != nil)
        #expect(seen.value("hit") == 1 && seen.response("hit")?.thumbnail != nil)
        pipeline.shutdown()
    }

    @Test("a completion may submit again, on its own slot and on another")
    func completionSubmitsAgain() async throws {
        let pipeline = try fixture.pipeline()
        let seen = Arrivals()
        let cell = SlotID(client: "app", slot: "reused")
        let other = SlotID(client: "app", slot: "other")
        Thread {
            // A render for the cell; when it arrives, the cell is reused (same slot: the
            // completion runs while its own delivery is in progress) and another cell asks too.
            pipeline.submit(.init(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1, slot: cell)) { first in
                seen.record("first", 0, first)
                pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1, slot: cell)) { second in
                    seen.record("second", 0, second)
                    // A memory hit from inside a completion: on the same slot again, then release it.
                    pipeline.submit(.init(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1, slot: cell)) { third in
                        seen.record("third", 0, third)
                    }
                }
                pipeline.submit(.init(assetPath: "img2.png", kind: PipelineFixture.large, scale: 1, slot: other)) { response in
                    seen.record("other", 0, response)
                    pipeline.release(other)
                }
            }
        }.start()
        let all = await seen.wait(for: 4)
        #expect(all, "answers so far: \(seen.tags)")
        guard all else { return }
        #expect(seen.response("first")?.thumbnail?.key.assetPath == "img0.jpg")
        #expect(seen.response("second")?.thumbnail?.key.assetPath == "img1.jpg")
        #expect(seen.response("third")?.thumbnail?.key.assetPath == "img1.jpg")
        #expect(seen.response("third")?.token == 3)
        #expect(seen.response("other")?.thumbnail?.key.assetPath == "img2.png")
        #expect(pipeline.metrics.memoryHits == 1)
        pipeline.shutdown()
    }

    @Test("two completions delivered at once may each submit on the other's slot")
    func completionsSubmitOnEachOthersSlot() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.workers = 2 }
        let seen = Arrivals()
        let inside = Atomic<Int>(0)
        // Slots on different stripes of the gate, so that each completion holds a stripe the
        // other's submit would want.
        let first = SlotID(client: "app", slot: "x")
        let second = (0...).lazy.map { SlotID(client: "app", slot: "y\($0)") }
            .first { DeliveryGate.stripe(of: $0) != DeliveryGate.stripe(of: first) }!
        for (own, other, asset, next) in [(first, second, "img0.jpg", "img2.png"), (second, first, "img1.jpg", "img3.png")] {
            pipeline.submit(.init(assetPath: asset, kind: PipelineFixture.large, scale: 1, slot: own)) { response in
                inside.add(1, ordering: .relaxed)
                let deadline = ContinuousClock.now + .seconds(5)
                while inside.load(ordering: .relaxed) < 2 && ContinuousClock.now < deadline { usleep(200) }
                seen.record(own.slot, inside.load(ordering: .relaxed), response)
                pipeline.submit(.init(assetPath: next, kind: PipelineFixture.large, scale: 1, slot: other)) { response in
                    seen.record("then " + other.slot, 0, response)
                }
            }
        }
        try pipeline.startWorkers()
        let all = await seen.wait(for: 4, seconds: 20)
        #expect(all, "answers so far: \(seen.tags)")
        guard all else { return }
        // Both completions ran at once (one worker each) and neither waited for the other.
        #expect(seen.value(first.slot) == 2 && seen.value(second.slot) == 2)
        #expect(seen.response("then " + first.slot)?.thumbnail?.key.assetPath == "img3.png")
        #expect(seen.response("then " + second.slot)?.thumbnail?.key.assetPath == "img2.png")
        pipeline.shutdown()
    }
}

/// Answers recorded from completions on any thread, with a value each completion read.
final class Arrivals: Sendable {
    private let entries = Mutex<[(tag: String, value: Int, response: PipelineResponse)]>([])

    func record(_ tag: String, _ value: Int, _ response: PipelineResponse) {
        entries.withLock { $0.append((tag, value, response)) }
    }

    var tags: [String] { entries.withLock { $0.map(\.tag) } }
    func value(_ tag: String) -> Int? { entries.withLock { $0.first { $0.tag == tag }?.value } }
    func response(_ tag: String) -> PipelineResponse? { entries.withLock { $0.first { $0.tag == tag }?.response } }

    /// Whether `count` answers arrived within `seconds`.
    func wait(for count: Int, seconds: Int = 10) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while entries.withLock({ $0.count }) < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
