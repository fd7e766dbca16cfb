import Dispatch
import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// The delivery gate on its own (no pipeline): bytes go out only for the slot's current claim,
/// a claim waits out a delivery already let through, and calls made from inside a completion
/// never wait (so completions cannot deadlock each other). Every wait is bounded.
@Suite struct DeliveryGateTests {
    /// The slots' current claims, as the pipeline's lock would hold them.
    final class Claims: Sendable {
        let current = Mutex<[SlotID: UInt64]>([:])
        func set(_ slot: SlotID, _ claim: UInt64) { current.withLock { $0[slot] = claim } }
        var admit: DeliveryGate.Admit {
            { slot, claim, _ in
                self.current.withLock { $0[slot] == claim ? .deliver : .superseded(currentToken: $0[slot] ?? 0) }
            }
        }
    }

    /// What happened, in order, from any thread.
    final class Events: Sendable {
        let list = Mutex<[String]>([])
        func add(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    static let bytes: PipelineResponse = {
        let key = CacheKey(asset: AssetVersion(path: "a.jpg", size: 1, modifiedNanoseconds: 1, inode: 1, device: 1),
                           kind: SlotKind(name: "k", widthPoints: 1, heightPoints: 1), scale: 1, encoder: EncoderSettings())
        let thumbnail = CachedThumbnail(key: key, bytes: [1, 2, 3], filePath: "/nowhere", format: .jpeg, width: 1, height: 1)
        return PipelineResponse(token: 1, result: .success(thumbnail))
    }()

    static func gated(_ slot: SlotID, claim: UInt64, _ completion: @escaping Completion) -> Answers {
        var answers = Answers()
        answers.addGated(completion, bytes, slot: slot, claim: claim)
        return answers
    }

    static func claimed(_ slot: SlotID) -> Answers {
        var answers = Answers()
        answers.claimed(slot)
        return answers
    }

    /// Two slots whose stripes differ.
    static func slotsOnTwoStripes() -> (SlotID, SlotID) {
        let first = SlotID(client: "app", slot: "x")
        let second = (0...).lazy.map { SlotID(client: "app", slot: "y\($0)") }
            .first { DeliveryGate.stripe(of: $0) != DeliveryGate.stripe(of: first) }!
        return (first, second)
    }

    @Test func onlyTheCurrentClaimIsHandedTheBytes() {
        let gate = DeliveryGate()
        let claims = Claims()
        let slot = SlotID(client: "app", slot: "cell")
        claims.set(slot, 2)
        let events = Events()
        gate.deliver(Self.gated(slot, claim: 2) { events.add("claim 2: \($0.thumbnail?.bytes == [1, 2, 3] ? "bytes" : "no bytes")") },
                     admit: claims.admit)
        gate.deliver(Self.gated(slot, claim: 1) { response in
            if case .superseded(let current)? = response.error, response.token == 1 { events.add("claim 1: superseded by \(current)") }
        }, admit: claims.admit)
        #expect(events.all == ["claim 2: bytes", "claim 1: superseded by 2"])
    }

    @Test func aClaimWaitsOutADeliveryAlreadyLetThrough() {
        let gate = DeliveryGate()
        let claims = Claims()
        let slot = SlotID(client: "app", slot: "cell")
        claims.set(slot, 1)
        let events = Events()
        let inside = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        Thread {
            gate.deliver(Self.gated(slot, claim: 1) { _ in
                inside.signal()
                _ = finish.wait(timeout: .now() + 10)
                events.add("old request handed its bytes")
            }, admit: claims.admit)
        }.start()
        #expect(inside.wait(timeout: .now() + 10) == .success)
        // A newer request claims the slot (under the pipeline lock), then its submit passes the gate.
        claims.set(slot, 2)
        let returned = DispatchSemaphore(value: 0)
        Thread {
            gate.deliver(Self.claimed(slot), admit: claims.admit)
            events.add("submit returned")
            returned.signal()
        }.start()
        #expect(returned.wait(timeout: .now() + 0.2) == .timedOut, "submit returned while the old delivery was under way")
        finish.signal()
        #expect(returned.wait(timeout: .now() + 10) == .success)
        #expect(events.all == ["old request handed its bytes", "submit returned"])
    }

    @Test func aCompletionMayCallBackOnItsOwnStripe() {
        let gate = DeliveryGate()
        let claims = Claims()
        let (slot, other) = Self.slotsOnTwoStripes()
        claims.set(slot, 1)
        claims.set(other, 1)
        let events = Events()
        let done = DispatchSemaphore(value: 0)
        Thread {
            gate.deliver(Self.gated(slot, claim: 1) { _ in
                // The slot is claimed again from inside its own delivery (a same-stripe pass: skipped,
                // or the Mutex would trap on the recursion), and answers are decided for both slots.
                claims.set(slot, 2)
                var nested = Self.gated(slot, claim: 2) { _ in events.add("nested, same slot") }
                nested.claimed(slot)
                gate.deliver(nested, admit: claims.admit)
                gate.deliver(Self.gated(other, claim: 1) { _ in events.add("nested, other slot") }, admit: claims.admit)
                events.add("outer completion returns")
            }, admit: claims.admit)
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(events.all == ["outer completion returns", "nested, same slot", "nested, other slot"])
    }

    @Test func twoCompletionsClaimingEachOthersSlotDoNotDeadlock() {
        let gate = DeliveryGate()
        let claims = Claims()
        let (first, second) = Self.slotsOnTwoStripes()
        claims.set(first, 1)
        claims.set(second, 1)
        let events = Events()
        let arrived = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for (own, other) in [(first, second), (second, first)] {
            Thread {
                gate.deliver(Self.gated(own, claim: 1) { _ in
                    // Both completions run at once, each holding its own stripe...
                    arrived.add(1, ordering: .relaxed)
                    let deadline = ContinuousClock.now + .seconds(10)
                    while arrived.load(ordering: .relaxed) < 2 && ContinuousClock.now < deadline { usleep(100) }
                    if arrived.load(ordering: .relaxed) == 2 { events.add("both inside") }
                    // ...and claims the other's slot: its pass must not wait for the other completion.
                    claims.set(other, 2)
                    gate.deliver(Self.claimed(other), admit: claims.admit)
                    events.add("\(own.slot) claimed \(other.slot)")
                }, admit: claims.admit)
                done.signal()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 15) == .success)
        #expect(done.wait(timeout: .now() + 15) == .success)
        #expect(events.all.filter { $0 == "both inside" }.count == 2)
        #expect(events.all.count == 4)
    }
}
