import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Random reuse sequences over many slots from many threads; every answer is checked.
@Suite struct PipelineStressTests {
    struct Submitted: Sendable {
        let slot: SlotID
        let token: UInt64
        let asset: String
    }

    /// What the test knows about every request, and the answers that came back.
    final class Ledger: Sendable {
        struct State {
            var answers: [Int: PipelineResponse] = [:]
            var duplicateAnswers = 0
            var wrongAsset: [String] = []
            var lastIndexPerSlot: [SlotID: Int] = [:]
            var submitted: [Int: Submitted] = [:]
            /// Per slot, the newest step (request index) that took the slot over and whose
            /// `submit` (or `release`) has returned: bytes for an earlier request are stale.
            var closedBefore: [SlotID: Int] = [:]
            var staleDeliveries: [String] = []
        }
        let state = Mutex(State())
    }

    @Test func randomReuseNeverDeliversAStaleThumbnail() async throws {
        let fixture = try PipelineFixture()
        let pipeline = try fixture.pipeline { $0.workers = 2 }
        let assets = fixture.imageNames + ["broken.jpg", "missing.jpg"]
        // Many distinct renders keep the workers busy, so answers race with newer requests.
        let kinds: [SlotKind] = (1...12).map { (step: Int) -> SlotKind in
            let mode: SlotKind.ContentMode = step % 2 == 0 ? .fill : .fit
            let mask: SlotKind.Mask = step % 3 == 0 ? .circle : .none
            return SlotKind(name: "k\(step)", widthPoints: Double(24 * step), heightPoints: Double(20 * step), mode: mode, mask: mask)
        }
        let ledger = Ledger()
        let requestsPerThread = 1_500
        let threads = 6

        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    // Each thread owns its slots, so "the newest token of a slot" is well defined.
                    let slots = (0..<8).map { SlotID(client: "client-\(thread)", slot: "cell-\($0)") }
                    var tokens = [SlotID: UInt64]()
                    for step in 0..<requestsPerThread {
                        let index = thread * requestsPerThread + step
                        let slot = slots.randomElement(using: &random)!
                        let roll = Int.random(in: 0..<20, using: &random)
                        if roll == 0 {
                            pipeline.release(slot)
                            ledger.state.withLock { $0.closedBefore[slot] = index }
                            continue
                        }
                        // Sometimes a late request arrives with an old token.
                        let current = tokens[slot, default: 0]
                        let token = roll == 1 && current > 2 ? current - 2 : current + 1
                        if token > current { tokens[slot] = token }
                        let asset = assets.randomElement(using: &random)!
                        let kind = kinds.randomElement(using: &random)!
                        ledger.state.withLock { $0.submitted[index] = Submitted(slot: slot, token: token, asset: asset) }
                        if token > current { ledger.state.withLock { $0.lastIndexPerSlot[slot] = index } }
                        pipeline.submit(.init(assetPath: asset, kind: kind, scale: kind.scales[0],
                                              priority: Bool.random(using: &random) ? .visible : .prefetch,
                                              slot: slot, token: token)) { response in
                            // Some completions take their time (as building a response does): a
                            // newer submit must still not return before they finish.
                            if index % 8 == 0 { usleep(300) }
                            ledger.state.withLock { state in
                                if state.answers[index] != nil { state.duplicateAnswers += 1 }
                                state.answers[index] = response
                                if let thumbnail = response.thumbnail, thumbnail.key.assetPath != asset {
                                    state.wrongAsset.append("\(slot) token \(token): asked \(asset), got \(thumbnail.key.assetPath)")
                                }
                                if response.thumbnail != nil, let closed = state.closedBefore[slot], closed > index {
                                    state.staleDeliveries.append("\(slot) token \(token) got bytes after step \(closed) returned")
                                }
                            }
                        }
                        // A late token took nothing over; everything else did.
                        if token > current { ledger.state.withLock { $0.closedBefore[slot] = index } }
                        if step % 50 == 0 { try? await Task.sleep(for: .milliseconds(Int.random(in: 0...3, using: &random))) }
                    }
                }
            }
        }
        let expected = ledger.state.withLock { $0.submitted.count }
        let deadline = ContinuousClock.now + .seconds(60)
        while ledger.state.withLock({ $0.answers.count }) < expected && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let requests = ledger.state.withLock { $0.submitted }
        ledger.state.withLock { state in
            #expect(state.answers.count == expected, "every request is answered")
            #expect(state.duplicateAnswers == 0, "no request is answered twice")
            #expect(state.wrongAsset.isEmpty, "\(state.wrongAsset.prefix(5))")
            // Once a newer submit (or a release) of a slot returned, no older request got bytes.
            #expect(state.staleDeliveries.isEmpty, "\(state.staleDeliveries.count) stale: \(state.staleDeliveries.prefix(5))")
            for (index, response) in state.answers {
                guard let request = requests[index] else { continue }
                // The answer carries the request's own token.
                #expect(response.token == request.token)
                // A superseding token is always newer than the superseded one.
                if case .superseded(let current)? = response.error { #expect(current >= request.token) }
            }
            // Each slot's last request was never superseded (nothing came after it).
            for (slot, index) in state.lastIndexPerSlot {
                if case .superseded? = state.answers[index]?.error {
                    Issue.record("last request of \(slot) was superseded")
                }
            }
        }
        let metrics = pipeline.metrics
        #expect(metrics.superseded > 0)
        #expect(metrics.coalesced > 0)
        #expect(metrics.renders > 30)
        pipeline.shutdown()
        #expect(pipeline.metrics.runningJobs == 0)
    }
}
