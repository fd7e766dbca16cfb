/// A request's completion, called exactly once.
typealias Completion = @Sendable (PipelineResponse) -> Void

/// Answers decided under the pipeline's lock, delivered (`DeliveryGate.deliver`) after it was
/// released: a completion never runs under the lock, so it may take its time, read the metrics
/// or submit again.
struct Answers {
    enum Delivery {
        /// No bytes for a slot's request (a failure, a cancellation, a superseded answer, or a
        /// request that names no slot): nothing newer can make it wrong, it goes straight out.
        case direct(Completion, PipelineResponse)
        /// Bytes for the request holding `claim` of `slot` when they were decided: they go
        /// through the slot's gate, which hands them over only if the claim still holds.
        case gated(Completion, PipelineResponse, slot: SlotID, claim: UInt64)
        /// A gated answer whose check was made early (`DeliveryGate.admitEarly`): `response` is
        /// what the check decided, and the deliverer holds `stripe` until its completion returned.
        case admitted(Completion, PipelineResponse, stripe: Int)
    }

    private(set) var deliveries: [Delivery] = []
    /// Slots a request claimed in this decision: the caller waits out any delivery to them
    /// already past the gate before it returns (see `DeliveryGate`).
    private(set) var claimedSlots: [SlotID] = []

    var isEmpty: Bool { deliveries.isEmpty && claimedSlots.isEmpty }

    mutating func add(_ waiter: Waiter, _ response: PipelineResponse) {
        if let completion = waiter.completion { deliveries.append(.direct(completion, response)) }
    }

    mutating func add(_ completion: @escaping Completion, _ response: PipelineResponse) {
        deliveries.append(.direct(completion, response))
    }

    /// Only through `PipelineState.answer`, which pins the slot until the gate has looked.
    mutating func addGated(_ completion: @escaping Completion, _ response: PipelineResponse, slot: SlotID, claim: UInt64) {
        deliveries.append(.gated(completion, response, slot: slot, claim: claim))
    }

    /// The first gated answer, if any, for an early check: its index and what it carries.
    var firstGated: (index: Int, slot: SlotID, claim: UInt64, token: UInt64?)? {
        for (index, delivery) in deliveries.enumerated() {
            if case .gated(_, let response, let slot, let claim) = delivery { return (index, slot, claim, response.token) }
        }
        return nil
    }

    /// Replaces the gated answer at `index` by its admitted form, moved to the front: it goes out
    /// first, so that no other completion runs while its stripe is held.
    mutating func admit(at index: Int, response: PipelineResponse, stripe: Int) {
        guard case .gated(let completion, _, _, _) = deliveries[index] else { return }
        deliveries.remove(at: index)
        deliveries.insert(.admitted(completion, response, stripe: stripe), at: 0)
    }

    mutating func claimed(_ slot: SlotID) {
        claimedSlots.append(slot)
    }
}
