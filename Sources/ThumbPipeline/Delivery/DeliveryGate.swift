import Synchronization
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// Delivers the answers the pipeline decided under its lock, after it released it, keeping the
/// promise the lock used to keep: **once `submit` of a newer request on a slot has returned, no
/// older request of that slot is ever handed bytes** (nor, once `release` of the slot has
/// returned, any request of it). That is the server side of `prepareForReuse`: a reused cell
/// is never painted with what it asked for before.
///
/// How (a fixed array of stripe locks, a slot's stripe chosen by its hash):
/// 1. Every request that takes a slot over gets a new *claim* (`SlotTable`), under the pipeline
///    lock; claims never repeat. Bytes for a slot's request carry the claim they were decided for.
/// 2. The deliverer of such bytes takes the slot's stripe, then (briefly, under the pipeline
///    lock) asks whether that claim still holds the slot, and while still holding the stripe
///    hands over the bytes if it does — or answers `superseded(currentToken:)` (`cancelled`
///    after a release) if not. Exactly one answer either way.
/// 3. `submit` (and `release`), after it released the pipeline lock and before it returns,
///    takes and releases the stripe of the slot it claimed.
/// Both the claim and the check happen under the pipeline lock, so one comes first. If the check
/// came after the claim, it sees another claim: no bytes. If it came first, the deliverer held
/// the stripe since before the claim, so submit's take of the stripe waits until that delivery's
/// completion has returned: it finished before submit returned. Either way no older request is
/// handed bytes after submit returned. Slots sharing a stripe only wait for each other needlessly.
/// A slot with bytes decided and not yet checked is pinned (never forgotten), so the check sees
/// the slot's real claim; submit passes the stripe on every claim, not only when it superseded an
/// earlier token, because a slot forgotten after a check and met again is a new record whose
/// first claim must still wait out that delivery. Failures, cancellations, superseded answers and
/// requests without a slot carry no bytes a newer request could contradict: they go straight out.
///
/// Why it cannot deadlock:
/// - Lock order is stripe → pipeline lock, never the reverse: under the pipeline lock nothing
///   takes a stripe or runs a completion, and its holders wait for nothing else.
/// - A completion runs holding at most its own stripe, and a thread blocks on a stripe only while
///   it holds none (the delivery loop between completions, or a pipeline call made from outside
///   any completion). Inside a completion — which may call back into the pipeline — nothing
///   blocks on a stripe: what the call decided is queued and delivered by this thread's delivery
///   loop once the completion has returned (`DeliveryContext`), and its stripe pass is skipped
///   when it is the stripe this thread holds (any other delivery through it would need that
///   stripe, so none is in flight), tried without waiting otherwise, and when busy done by the
///   loop right after the completion returns. So no thread ever waits for a stripe while holding
///   one: two completions each submitting on the other's slot cannot wait for each other.
/// Early checks (`admitEarly`): a render thread finishing a job decides its answers under the
/// pipeline lock; rather than take that lock again for step 2, it tries the slot's stripe there,
/// without waiting. When it gets it, the check of step 2 runs at once (under both locks, as
/// step 2 would), and the answer goes out first, its stripe released when its completion has
/// returned. Nothing above changes: the check still happens under the pipeline lock while the
/// stripe is held, and the bytes are handed over before the stripe is released. The lock order
/// holds too: under the pipeline lock a stripe is only tried, never waited for. Only one stripe
/// is held that way, only by a thread outside any delivery loop (no completion of its own
/// running, no slot claimed in the same decision), and its answer is the first handed over, so
/// no other completion can run while it holds a stripe a call from that completion would wait
/// for. When the stripe is busy the answer takes the usual way.
///
/// The price falls only on calls made from inside a completion: their answers come after the
/// calling completion returned (on the same thread, before the outermost pipeline call returns),
/// and when a delivery to their slot was under way on another thread at that moment, the promise
/// above holds from when the calling completion returned rather than from when the call did.
/// (A completion that blocks on a lock held by a thread that is calling `submit` deadlocks as it
/// always did: completions must not wait for the pipeline's callers.)
final class DeliveryGate: Sendable {
    static let stripeCount = 64

    /// The check of step 2, run under the pipeline lock: may bytes decided for `claim` of the
    /// slot (for the request of that token) go out?
    typealias Admit = (_ slot: SlotID, _ claim: UInt64, _ token: UInt64?) -> SlotTable.Admission

    private final class Stripe: Sendable {
        let lock = PThreadLock()
    }

    private let stripes: [Stripe] = (0..<DeliveryGate.stripeCount).map { _ in Stripe() }

    static func stripe(of slot: SlotID) -> Int {
        Int(UInt(bitPattern: slot.hashValue) % UInt(stripeCount))
    }

    /// Delivers `answers` (decided under the pipeline lock, which the caller no longer holds)
    /// and waits out deliveries in flight to the slots they claimed. `admit` is the check.
    func deliver(_ answers: Answers, admit: @escaping Admit) {
        guard !answers.isEmpty else { return }
        if let context = DeliveryContext.current {
            // A call from inside a completion on this thread: queue, never wait.
            for slot in answers.claimedSlots { passFromCompletion(Self.stripe(of: slot), context) }
            context.pending.append(contentsOf: answers.deliveries.map { ($0, admit) })
            return
        }
        let context = DeliveryContext()
        context.enter()
        defer { context.leave() }
        for slot in answers.claimedSlots { pass(Self.stripe(of: slot)) }
        context.pending = answers.deliveries.map { ($0, admit) }
        handOverPending(context)
    }

    /// Under the pipeline lock (`check` runs under it): the early check of the first gated
    /// answer, when its stripe is free now (see above). The caller must `deliver` the answers.
    func admitEarly(_ answers: inout Answers, check: (_ slot: SlotID, _ claim: UInt64, _ token: UInt64?) -> SlotTable.Admission) {
        guard answers.claimedSlots.isEmpty, DeliveryContext.current == nil, let gated = answers.firstGated else { return }
        let stripe = Self.stripe(of: gated.slot)
        guard stripes[stripe].lock.tryLock() else { return }
        guard case .gated(_, let response, _, _) = answers.deliveries[gated.index] else {
            stripes[stripe].lock.unlock()
            return
        }
        answers.admit(at: gated.index, response: Self.response(response, after: check(gated.slot, gated.claim, gated.token)),
                      stripe: stripe)
    }

    /// What a gated answer becomes after its check.
    private static func response(_ response: PipelineResponse, after admission: SlotTable.Admission) -> PipelineResponse {
        switch admission {
        case .deliver: response
        case .superseded(let currentToken): PipelineResponse(token: response.token, result: .failure(.superseded(currentToken: currentToken)))
        case .cancelled: PipelineResponse(token: response.token, result: .failure(.cancelled))
        }
    }

    /// Hands over what `context` holds in order, including what the completions it calls add.
    private func handOverPending(_ context: DeliveryContext) {
        var next = 0
        while next < context.pending.count {
            let (delivery, admit) = context.pending[next]
            next += 1
            handOver(delivery, admit: admit, context: context)
            for stripe in context.passLater { pass(stripe) }
            context.passLater.removeAll()
        }
    }

    /// Delivers one answer that carries no slot's bytes (what `Answers.add` makes `.direct`)
    /// the way `deliver` would, without its bookkeeping: a cache hit of a request without a slot.
    func deliverDirect(_ completion: @escaping Completion, _ response: PipelineResponse) {
        if let context = DeliveryContext.current {
            // A direct answer's check is never asked (`handOver`).
            context.pending.append((.direct(completion, response), { _, _, _ in .deliver }))
            return
        }
        let context = DeliveryContext()
        context.enter()
        defer { context.leave() }
        completion(response)
        // What calls from inside the completion decided, as `deliver` runs it.
        handOverPending(context)
    }

    private func handOver(_ delivery: Answers.Delivery, admit: Admit, context: DeliveryContext) {
        switch delivery {
        case .direct(let completion, let response):
            completion(response)
        case .gated(let completion, let response, let slot, let claim):
            let stripe = Self.stripe(of: slot)
            stripes[stripe].lock.withLock {
                context.heldStripe = stripe
                defer { context.heldStripe = nil }
                completion(Self.response(response, after: admit(slot, claim, response.token)))
            }
        case .admitted(let completion, let response, let stripe):
            // Taken by `admitEarly`, checked there: held until the completion returned.
            context.heldStripe = stripe
            completion(response)
            context.heldStripe = nil
            stripes[stripe].lock.unlock()
        }
    }

    /// Waits until no delivery holds the stripe (one that was let through has finished).
    private func pass(_ stripe: Int) {
        stripes[stripe].lock.withLock {}
    }

    private func passFromCompletion(_ stripe: Int, _ context: DeliveryContext) {
        if context.heldStripe == stripe { return }
        if stripes[stripe].lock.tryLock() {
            stripes[stripe].lock.unlock()
        } else {
            context.passLater.append(stripe)
        }
    }
}

/// What one thread's delivery loop (`DeliveryGate.deliver`) knows while it runs completions: the
/// stripe it holds, the answers that pipeline calls made from inside those completions decided
/// (delivered by the loop after the completion returned, so that no completion ever waits for
/// a stripe), and the stripes those calls could not pass at once.
///
/// Kept in a POSIX thread-specific slot rather than a task-local: a task-local is inherited by
/// tasks a completion starts, which run on other threads and must not think they deliver.
/// Only its own thread ever reads or writes it.
private final class DeliveryContext {
    var heldStripe: Int?
    var pending: [(Answers.Delivery, DeliveryGate.Admit)] = []
    var passLater: [Int] = []

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Fails only when the process ran out of keys (PTHREAD_KEYS_MAX, 1024): at startup, not on input.
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// The context of the delivery loop running on this thread, if one is.
    static var current: DeliveryContext? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<DeliveryContext>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The caller keeps the context alive until `leave`.
    func enter() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    func leave() {
        pthread_setspecific(Self.key, nil)
    }
}
