import ThumbImaging

/// The slot rules: for every reusable cell, the token it is at, the claim that holds it and its
/// live request, in a table bounded in count and in bytes. A plain value: the pipeline keeps it
/// under its lock and asks it for decisions; the tests ask it directly.
///
/// A *claim* is one request taking a slot over. Claims are numbered over the table's whole life
/// (never reused, not even for a slot forgotten and met again), so "is this request still the
/// one holding its slot?" has an exact answer even when tokens are equal: a token saturated at
/// `SlotToken.maximum`, or a client that sends the slot's current token again.
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
        /// A slot idle this long is forgotten first when the table is full.
        var idleSeconds: Double
    }

    /// What `claim` decided for a request on a slot.
    enum Claim: Equatable {
        /// The table is full of slots in use: the request is refused `overloaded`.
        case full
        /// The request's token is older than the slot's: refused `superseded(currentToken:)`.
        case late(currentToken: UInt64)
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

    let bounds: Bounds
    private(set) var records: [SlotID: Record] = [:]
    /// What the table is charged for its entries (`SlotID.tableBytes` summed).
    private(set) var tableBytes = 0
    private var lastClaim: UInt64 = 0

    init(bounds: Bounds) {
        self.bounds = bounds
    }

    var count: Int { records.count }

    subscript(slot: SlotID) -> Record? { records[slot] }

    /// Applies the token rules to a request on `slot` asking for `askedToken` (nil: issue the
    /// next one). A new slot is made room for first; a late token changes nothing; otherwise the
    /// request takes the slot over: new token, new claim, no live request yet.
    mutating func claim(_ slot: SlotID, askedToken: UInt64?, now: ContinuousClock.Instant) -> Claim {
        if records[slot] == nil {
            guard makeRoom(for: slot, now: now) else { return .full }
            records[slot] = Record(token: 0, claim: 0, liveWaiter: nil, pendingDeliveries: 0, lastUse: now)
            tableBytes += slot.tableBytes
        }
        guard var record = records[slot] else { return .full }
        if let askedToken, askedToken < record.token { return .late(currentToken: record.token) }
        let previousLive = record.liveWaiter
        lastClaim += 1
        record.token = askedToken ?? SlotToken.issued(after: record.token)
        record.claim = lastClaim
        record.liveWaiter = nil
        record.lastUse = now
        record.isReleased = false
        records[slot] = record
        return .claimed(token: record.token, claim: lastClaim, previousLive: previousLive)
    }

    /// The claim's request now waits on a job.
    mutating func setLiveWaiter(_ waiter: WaiterRef, of slot: SlotID) {
        records[slot]?.liveWaiter = waiter
    }

    /// The `prepareForReuse` moment: the slot keeps its token but its claim ends, so that bytes
    /// already decided for it are not handed over after the release (the gate answers them
    /// `cancelled`). Returns the live request to detach and answer `cancelled`. False as
    /// `known` for a slot the table does not remember (nothing to release).
    mutating func release(_ slot: SlotID) -> (known: Bool, liveWaiter: WaiterRef?) {
        guard var record = records[slot] else { return (false, nil) }
        let waiter = record.liveWaiter
        lastClaim += 1
        record.claim = lastClaim
        record.liveWaiter = nil
        record.isReleased = true
        records[slot] = record
        return (true, waiter)
    }

    /// The waiter got its answer (its job finished, or shutdown): the slot is idle, unless a
    /// newer request waits on it already.
    mutating func clearLiveWaiter(of slot: SlotID, waiterID: UInt64) {
        if records[slot]?.liveWaiter?.waiterID == waiterID { records[slot]?.liveWaiter = nil }
    }

    /// Bytes were decided for a request of `slot`: pinned until the gate has asked `admitDelivery`.
    mutating func expectDelivery(to slot: SlotID) {
        records[slot]?.pendingDeliveries += 1
    }

    /// The gate's question, asked once per expected delivery: is `claim` still the slot's?
    /// (The slot cannot be missing: pinned since `expectDelivery`. Were it missing, no bytes:
    /// superseding a current request costs a retry, a stale delivery costs a wrong picture.)
    mutating func admitDelivery(to slot: SlotID, claim: UInt64, token: UInt64?) -> Admission {
        guard var record = records[slot] else { return .superseded(currentToken: token ?? 0) }
        record.pendingDeliveries = max(0, record.pendingDeliveries - 1)
        records[slot] = record
        if record.claim == claim { return .deliver }
        return record.isReleased ? .cancelled : .superseded(currentToken: record.token)
    }
}

extension SlotTable {
    /// Makes room for `slot` in a table bounded in count and in bytes: forgets the unpinned
    /// slots idle past `idleSeconds`, then the least recently used unpinned ones, down to 90% of
    /// each bound (so that a full table does not sort itself on every new slot). False when
    /// the pinned slots leave no room.
    mutating func makeRoom(for slot: SlotID, now: ContinuousClock.Instant) -> Bool {
        let cost = slot.tableBytes
        func fits(count: Int, bytes: Int) -> Bool { records.count < count && tableBytes + cost <= bytes }
        let (maxSlots, maxBytes) = (bounds.maxSlots, bounds.maxTableBytes)
        guard !fits(count: maxSlots, bytes: maxBytes) else { return true }
        let idleMilliseconds = CheckedConversion.clampedInteger(bounds.idleSeconds * 1000, to: 0...(1 << 50))
        let cutoff = now - .milliseconds(idleMilliseconds)
        records = records.filter { $0.value.isPinned || $0.value.lastUse > cutoff }
        tableBytes = records.keys.reduce(0) { $0 + $1.tableBytes }
        if !fits(count: maxSlots, bytes: maxBytes) {
            let idle = records.filter { !$0.value.isPinned }.sorted { $0.value.lastUse < $1.value.lastUse }
            for (forgotten, _) in idle where !fits(count: maxSlots * 9 / 10, bytes: maxBytes * 9 / 10) {
                records[forgotten] = nil
                tableBytes -= forgotten.tableBytes
            }
        }
        return fits(count: maxSlots, bytes: maxBytes)
    }
}
