import ThumbImaging

/// The slot rules: for every reusable cell, the token it is at, the claim that holds it and its
/// live request, in a table bounded in count and in bytes. A plain value: the pipeline keeps it
/// under its lock and asks it for decisions; the tests ask it directly.
///
/// A *claim* is one request taking a slot over. Claims are numbered over the table's whole life
/// (never reused, not even for a slot forgotten and met again), so "is this request still the
/// one holding its slot?" has an exact answer even when tokens are equal: a token saturated at
/// `SlotToken.maximum`, or a client that sends the slot's current token again.
///
/// A slot's rule (its token) lives `idleSeconds` after its last use, whatever the bounds: the
/// records sit in one list ordered by last use (`SlotUseOrder`; every slot has the same idle
/// time, so that order is also the expiry order — a heap or a timer wheel would add nothing),
/// each claim expires a bounded number of them from the old end, and a slot trimmed at the cap
/// before its time leaves its token behind (`SlotTokenMemory`) for a request that comes back.
/// Every call does O(1) amortized work: no sort, no scan of the table under the pipeline's lock.
struct SlotTable {
    struct Record: Equatable {
        /// The client-visible generation (`SlotToken`).
        var token: UInt64
        /// The claim holding the slot now (0: none yet).
        var claim: UInt64
        /// The request of that claim while it waits on a job (cache hits and refusals have none).
        var liveWaiter: WaiterRef?
        /// Answers with bytes for this slot that were decided but not yet let through the
        /// delivery gate. While there are any the slot is never forgotten: the gate reads the
        /// slot's claim, and a slot forgotten and met again must not look unclaimed.
        var pendingDeliveries: Int
        var lastUse: ContinuousClock.Instant
        /// The current claim was ended by `release` (a delivery to it is answered `cancelled`).
        var isReleased = false

        /// In use: never forgotten to make room.
        var isPinned: Bool { liveWaiter != nil || pendingDeliveries > 0 }
    }

    struct Bounds {
        var maxSlots: Int
        /// What the entries may be charged in all (`SlotID.tableBytes` summed).
        var maxTableBytes: Int
        /// A slot idle this long is forgotten, token and all.
        var idleSeconds: Double
    }

    /// What `claim` decided for a request on a slot.
    enum Claim: Equatable {
        /// The table is full of slots in use (or of tokens it must still remember): the request
        /// is refused `overloaded`.
        case full
        /// The request's token is older than the slot's: refused `superseded(currentToken:)`.
        case late(currentToken: UInt64)
        /// The request's token is more than `SlotToken.maximumStep` past the slot's: refused
        /// `tokenTooFar(currentToken:)`, the slot unchanged.
        case tooFar(currentToken: UInt64)
        /// The request holds the slot now, under `token`. `previousLive`, the request it took
        /// over from (if it was still waiting), is to be detached and answered superseded.
        case claimed(token: UInt64, claim: UInt64, previousLive: WaiterRef?)
    }

    /// What the delivery gate may do with bytes decided for a claim.
    enum Admission: Equatable {
        case deliver
        /// A newer claim took the slot meanwhile: the request is answered this instead.
        case superseded(currentToken: UInt64)
        /// The slot was released meanwhile: the request is answered `cancelled` instead.
        case cancelled
    }

    /// Slots expired from the old end per claim: enough to keep up with any arrival rate (each
    /// claim adds at most one slot), small enough that no claim stalls.
    static let expiriesPerClaim = 8
    /// Pinned slots a claim may step over (moving each to the new end) while making room.
    static let pinnedStepsPerClaim = 64

    let bounds: Bounds
    let idle: Duration
    private(set) var order = SlotUseOrder()
    private(set) var tokenMemory: SlotTokenMemory
    /// What the table is charged for its entries (`SlotID.tableBytes` summed).
    private(set) var tableBytes = 0
    private var lastClaim: UInt64 = 0
    /// Slots forgotten after `idleSeconds`, and slots trimmed at the bounds before that.
    private(set) var expiredSlots = 0
    private(set) var trimmedSlots = 0
    /// Records the last `claim` looked at beyond its own (expired, trimmed or stepped over).
    private(set) var visitedByLastClaim = 0

    init(bounds: Bounds) {
        self.bounds = bounds
        let idleMilliseconds = CheckedConversion.clampedInteger(bounds.idleSeconds * 1000, to: 0...(1 << 50))
        idle = .milliseconds(idleMilliseconds)
        tokenMemory = SlotTokenMemory(capacity: max(1, bounds.maxSlots))
    }

    var count: Int { order.count }

    subscript(slot: SlotID) -> Record? { order[slot] }

    /// Every record, for tests and diagnostics (O(n)).
    var records: [SlotID: Record] { order.all }

    /// Applies the token rules to a request on `slot` asking for `askedToken` (nil: issue the
    /// next one). A new slot is made room for first, starting at the token it left behind if it
    /// was trimmed; a late token changes nothing; otherwise the request takes the slot over: new
    /// token, new claim, no live request yet.
    mutating func claim(_ slot: SlotID, askedToken: UInt64?, now: ContinuousClock.Instant) -> Claim {
        visitedByLastClaim = 0
        expire(now: now, limit: Self.expiriesPerClaim)
        var record: Record
        if let known = order[slot] {
            record = known
        } else {
            guard makeRoom(for: slot, now: now) else { return .full }
            let remembered = tokenMemory.take(slot) ?? 0
            record = Record(token: remembered, claim: 0, liveWaiter: nil, pendingDeliveries: 0, lastUse: now)
            order.insertNewest(slot, record)
            tableBytes += slot.tableBytes
        }
        if let askedToken, askedToken < record.token {
            // A late request changes nothing, not even the slot's place in the use order.
            return .late(currentToken: record.token)
        }
        if let askedToken, askedToken - record.token > SlotToken.maximumStep {
            return .tooFar(currentToken: record.token)
        }
        let previousLive = record.liveWaiter
        lastClaim += 1
        record.token = askedToken ?? SlotToken.issued(after: record.token)
        record.claim = lastClaim
        record.liveWaiter = nil
        record.lastUse = now
        record.isReleased = false
        order[slot] = record
        order.moveToNewest(slot)
        return .claimed(token: record.token, claim: lastClaim, previousLive: previousLive)
    }

    /// The claim's request now waits on a job.
    mutating func setLiveWaiter(_ waiter: WaiterRef, of slot: SlotID) {
        order.update(slot) { $0.liveWaiter = waiter }
    }

    /// The `prepareForReuse` moment: the claim ends, so that bytes already decided for it are
    /// not handed over after the release (the gate answers them `cancelled`), and the slot's
    /// token is forgotten: the next model of the cell starts afresh. A slot with deliveries still
    /// to be let through stays (at token 0, released) until the gate has asked; any other is
    /// forgotten at once, token memory and all. Returns the live request to detach and answer
    /// `cancelled`. False as `known` for a slot the table does not remember (nothing to release).
    mutating func release(_ slot: SlotID) -> (known: Bool, liveWaiter: WaiterRef?) {
        _ = tokenMemory.take(slot)
        guard var record = order[slot] else { return (false, nil) }
        let waiter = record.liveWaiter
        guard record.pendingDeliveries == 0 else {
            lastClaim += 1
            record.claim = lastClaim
            record.liveWaiter = nil
            record.isReleased = true
            record.token = 0
            order[slot] = record
            return (true, waiter)
        }
        forget(slot)
        return (true, waiter)
    }

    /// The waiter got its answer (its job finished, or shutdown): the slot is idle, unless a
    /// newer request waits on it already.
    mutating func clearLiveWaiter(of slot: SlotID, waiterID: UInt64) {
        order.update(slot) { if $0.liveWaiter?.waiterID == waiterID { $0.liveWaiter = nil } }
    }

    /// Bytes were decided for a request of `slot`: pinned until the gate has asked `admitDelivery`.
    mutating func expectDelivery(to slot: SlotID) {
        order.update(slot) { $0.pendingDeliveries += 1 }
    }

    /// The gate's question, asked once per expected delivery: is `claim` still the slot's?
    /// (The slot cannot be missing: pinned since `expectDelivery`. Were it missing, no bytes:
    /// superseding a current request costs a retry, a stale delivery costs a wrong picture.)
    mutating func admitDelivery(to slot: SlotID, claim: UInt64, token: UInt64?) -> Admission {
        guard var record = order[slot] else { return .superseded(currentToken: token ?? 0) }
        record.pendingDeliveries = max(0, record.pendingDeliveries - 1)
        order[slot] = record
        if record.claim == claim { return .deliver }
        return record.isReleased ? .cancelled : .superseded(currentToken: record.token)
    }
}

extension SlotTable {
    /// Forgets up to `limit` slots idle for `idleSeconds` (token and all: their rule has lapsed),
    /// and the remembered tokens of trimmed slots that would have lapsed by now. A pinned slot
    /// met at the old end is in use: it moves to the new end as if used now.
    mutating func expire(now: ContinuousClock.Instant, limit: Int) {
        let cutoff = now - idle
        var steps = 0
        while steps < limit, let (slot, record) = order.oldest, record.lastUse <= cutoff {
            steps += 1
            if record.isPinned {
                order.update(slot) { $0.lastUse = now }
                order.moveToNewest(slot)
            } else {
                forget(slot)
                expiredSlots += 1
            }
        }
        visitedByLastClaim += steps
        tokenMemory.expire(before: cutoff, limit: limit)
    }

    /// Makes room for `slot` in a table bounded in count and in bytes by trimming the least
    /// recently used unpinned slots, one per missing place, each leaving its token behind. False
    /// when the pinned slots leave no room, or the token memory is full of tokens that may not
    /// lapse yet: then the new slot is refused rather than an older slot's rule forgotten.
    mutating func makeRoom(for slot: SlotID, now: ContinuousClock.Instant) -> Bool {
        let cost = slot.tableBytes
        func fits() -> Bool { order.count < bounds.maxSlots && tableBytes + cost <= bounds.maxTableBytes }
        var pinnedSteps = 0
        while !fits() {
            guard let (oldest, record) = order.oldest else { return false }
            visitedByLastClaim += 1
            if record.isPinned {
                pinnedSteps += 1
                guard pinnedSteps <= min(Self.pinnedStepsPerClaim, order.count) else { return false }
                order.update(oldest) { $0.lastUse = now }
                order.moveToNewest(oldest)
                continue
            }
            guard tokenMemory.remember(oldest, token: record.token, lastUse: record.lastUse, lapsingBefore: now - idle) else { return false }
            forget(oldest)
            trimmedSlots += 1
        }
        return true
    }

    private mutating func forget(_ slot: SlotID) {
        guard order.remove(slot) != nil else { return }
        tableBytes -= slot.tableBytes
    }
}
