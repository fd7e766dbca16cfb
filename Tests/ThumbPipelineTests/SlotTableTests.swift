import Testing
import ThumbImaging
@testable import ThumbPipeline

/// The slot rules on their own (no pipeline, no threads): tokens, claims, supersede, the
/// delivery gate's check, and the bounded table.
@Suite struct SlotTableTests {
    static let start = ContinuousClock.now
    static func at(seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    func table(maxSlots: Int = 100, maxTableBytes: Int = 1 << 20, idleSeconds: Double = 600) -> SlotTableProbe {
        SlotTableProbe(SlotTable(bounds: .init(maxSlots: maxSlots, maxTableBytes: maxTableBytes, idleSeconds: idleSeconds)))
    }

    func cell(_ name: String) -> SlotID { SlotID(client: "app", slot: name) }

    /// The claim's token and number, or nil for a refusal.
    func claimed(_ table: SlotTableProbe, _ slot: SlotID, token: UInt64? = nil, seconds: Int = 0)
        -> (token: UInt64, claim: UInt64, previous: WaiterRef?)? {
        guard case .claimed(let issued, let claim, let previous) = table.claim(slot, askedToken: token, now: Self.at(seconds: seconds))
        else { return nil }
        return (issued, claim, previous)
    }

    @Test func issuedTokensGrowAndClientTokensAreKept() throws {
        let slots = table()
        let a = cell("a")
        #expect(claimed(slots, a)?.token == 1)
        #expect(claimed(slots, a)?.token == 2)
        #expect(claimed(slots, a, token: 10)?.token == 10)
        #expect(claimed(slots, a)?.token == 11)
        // Each slot counts for itself.
        #expect(claimed(slots, cell("b"))?.token == 1)
    }

    @Test func aLateTokenIsRefusedAndChangesNothing() throws {
        let slots = table()
        let a = cell("a")
        let held = try #require(claimed(slots, a, token: 7))
        slots.setLiveWaiter(.init(digest: "d", waiterID: 1), of: a)
        #expect(slots.claim(a, askedToken: 6, now: Self.at(seconds: 1)) == .late(currentToken: 7))
        #expect(slots[a]?.token == 7 && slots[a]?.claim == held.claim)
        #expect(slots[a]?.liveWaiter == .init(digest: "d", waiterID: 1), "the live request stays")
        // The same token again is a new request: it takes the slot over.
        let again = try #require(claimed(slots, a, token: 7))
        #expect(again.claim > held.claim && again.previous == .init(digest: "d", waiterID: 1))
    }

    @Test func aClaimSupersedesTheLiveRequestOnce() throws {
        let slots = table()
        let a = cell("a")
        #expect(claimed(slots, a)?.previous == nil)
        slots.setLiveWaiter(.init(digest: "x", waiterID: 5), of: a)
        #expect(claimed(slots, a)?.previous == .init(digest: "x", waiterID: 5))
        #expect(slots[a]?.liveWaiter == nil)
        #expect(claimed(slots, a)?.previous == nil, "taken over once, not twice")
    }

    @Test func claimsStayDistinctWhenTheTokenIsSentAgain() throws {
        let slots = table()
        let a = cell("a")
        let first = try #require(claimed(slots, a, token: 7))
        let second = try #require(claimed(slots, a, token: 7))
        #expect(second.token == 7)
        #expect(second.claim > first.claim)
        slots.expectDelivery(to: a)
        // Bytes decided for the first request are refused although its token equals the slot's.
        #expect(slots.admitDelivery(to: a, claim: first.claim, token: 7) == .superseded(currentToken: 7))
    }

    @Test("issue 23, finding 2: a claim moves a slot's token forward by at most 2^16; past that nothing changes")
    func aTokenMayNotJumpFarAhead() throws {
        let slots = table()
        let a = cell("a")
        // On b259acf a stranger's token=2^53-1 pinned the slot: every later request of its user was late.
        #expect(slots.claim(a, askedToken: SlotToken.maximum, now: Self.at(seconds: 0)) == .tooFar(currentToken: 0))
        #expect(slots.claim(a, askedToken: SlotToken.maximumStep + 1, now: Self.at(seconds: 0)) == .tooFar(currentToken: 0))
        #expect(slots[a]?.token == 0 && slots[a]?.claim == 0, "a refused jump changes nothing")
        let step = try #require(claimed(slots, a, token: SlotToken.maximumStep))
        #expect(step.token == SlotToken.maximumStep)
        #expect(claimed(slots, a, token: 2 * SlotToken.maximumStep)?.token == 2 * SlotToken.maximumStep, "one step at a time")
        #expect(claimed(slots, a)?.token == 2 * SlotToken.maximumStep + 1)
    }

    @Test("issue 23, finding 2: a release forgets the slot's token, so the cell's next model starts afresh")
    func aReleaseForgetsTheToken() throws {
        let slots = table()
        let a = cell("a")
        _ = try #require(claimed(slots, a, token: 50))
        #expect(slots.release(a) == (true, nil))
        #expect(slots[a] == nil, "an idle slot is forgotten at its release")
        // On b259acf the token stayed at 50: token 1 was late (409) until the slot idled out.
        #expect(claimed(slots, a, token: 1)?.token == 1)
        // A slot trimmed at the bounds left its token in the memory: a release forgets that too.
        let small = table(maxSlots: 1)
        _ = claimed(small, cell("old"), token: 40)
        _ = claimed(small, cell("new"), seconds: 1)
        #expect(small[cell("old")] == nil)
        #expect(small.release(cell("old")) == (false, nil))
        #expect(claimed(small, cell("old"), token: 3, seconds: 2)?.token == 3, "the remembered token went with the release")
    }

    @Test func theGateLetsOnlyTheCurrentClaimThrough() throws {
        let slots = table()
        let a = cell("a")
        let first = try #require(claimed(slots, a))
        slots.expectDelivery(to: a)
        #expect(slots.admitDelivery(to: a, claim: first.claim, token: first.token) == .deliver)
        slots.expectDelivery(to: a)
        let second = try #require(claimed(slots, a))
        #expect(slots.admitDelivery(to: a, claim: first.claim, token: first.token) == .superseded(currentToken: second.token))
        // A release ends the claim too, and its answer is a cancellation.
        slots.expectDelivery(to: a)
        #expect(slots.release(a) == (true, nil))
        #expect(slots.admitDelivery(to: a, claim: second.claim, token: second.token) == .cancelled)
        #expect(slots[a]?.token == 0, "a release forgets the token (the record stays while a delivery is pending)")
        #expect(slots[a]?.pendingDeliveries == 0)
        #expect(slots.release(cell("unknown")) == (false, nil))
    }

    @Test("at the count bound the least recently used slot is trimmed, one per new slot, and its token kept")
    func roomByCountTrimsTheLeastRecentlyUsedSlotAndKeepsItsToken() throws {
        let slots = table(maxSlots: 10)
        for index in 0..<10 { _ = claimed(slots, cell("s\(index)"), token: 40 + UInt64(index), seconds: index) }
        #expect(slots.count == 10)
        #expect(claimed(slots, cell("new"), seconds: 20) != nil)
        // Exactly one place was made: the oldest went, the others stay.
        #expect(slots.count == 10 && slots[cell("s0")] == nil)
        #expect((1..<10).allSatisfy { slots[cell("s\($0)")] != nil } && slots[cell("new")] != nil)
        // The trimmed slot comes back: its rule did not lapse, so its old requests are still late.
        #expect(slots.claim(cell("s0"), askedToken: 0, now: Self.at(seconds: 21)) == .late(currentToken: 40))
        #expect(slots.claim(cell("s0"), askedToken: 39, now: Self.at(seconds: 21)) == .late(currentToken: 40))
        #expect(claimed(slots, cell("s0"), seconds: 22)?.token == 41, "the next issued token follows the kept one")
        #expect(slots.table.trimmedSlots == 2 && slots.table.tokenMemory.count == 1)
    }

    @Test("slots idle past idleSeconds are forgotten by time, before any bound is reached")
    func idleSlotsExpireByTime() throws {
        let slots = table(maxSlots: 1_000, idleSeconds: 60)
        for index in 0..<5 { _ = claimed(slots, cell("old\(index)"), seconds: 0) }
        for index in 0..<4 { _ = claimed(slots, cell("recent\(index)"), seconds: 100) }
        // Far from the bound, yet the next claim expires the slots idle past 60 s.
        #expect(claimed(slots, cell("ninth"), seconds: 110) != nil)
        #expect(slots.count == 5)
        #expect((0..<5).allSatisfy { slots[cell("old\($0)")] == nil })
        #expect((0..<4).allSatisfy { slots[cell("recent\($0)")] != nil })
        #expect(slots.table.expiredSlots == 5 && slots.table.trimmedSlots == 0)
        // An expired slot's rule has lapsed with it: it starts afresh.
        #expect(claimed(slots, cell("old0"), token: 0, seconds: 111)?.token == 0)
        // A slot used again is not idle: it stays past 60 s from its first use.
        #expect(claimed(slots, cell("recent0"), seconds: 150) != nil)
        #expect(claimed(slots, cell("later"), seconds: 165) != nil)
        #expect(slots[cell("recent0")] != nil && slots[cell("recent1")] == nil)
    }

    @Test("no claim does more than a bounded amount of trimming or expiry, however large the table")
    func claimsDoBoundedWork() throws {
        let size = 100_000
        let slots = table(maxSlots: size, maxTableBytes: 1 << 30, idleSeconds: 600)
        for index in 0..<size { _ = claimed(slots, cell("s\(index)"), seconds: 0) }
        var worst = 0
        // Full: every new slot trims one; the old code forgot 10% of the table (sorted) at once.
        for index in 0..<1_000 {
            #expect(claimed(slots, cell("n\(index)"), seconds: 1) != nil)
            worst = max(worst, slots.table.visitedByLastClaim)
        }
        #expect(worst <= 1 + SlotTable.expiriesPerClaim, "a claim visited \(worst) records")
        #expect(slots.count == size)
        // Everything idle at once: each claim expires at most its share, the table drains over claims.
        for index in 0..<200 {
            _ = claimed(slots, cell("late\(index)"), seconds: 10_000)
            worst = max(worst, slots.table.visitedByLastClaim)
        }
        #expect(worst <= 1 + SlotTable.expiriesPerClaim)
        #expect(slots.count == size - 200 * SlotTable.expiriesPerClaim + 200)
    }

    @Test("a table full of tokens that may not lapse yet refuses a new slot instead of forgetting one")
    func tokenMemoryFullRefusesNewSlots() throws {
        let slots = table(maxSlots: 2, idleSeconds: 600)
        _ = claimed(slots, cell("a"), token: 5, seconds: 0)
        _ = claimed(slots, cell("b"), token: 6, seconds: 1)
        // Two trims fill the memory (capacity = maxSlots)…
        #expect(claimed(slots, cell("c"), token: 1, seconds: 2) != nil)
        #expect(claimed(slots, cell("d"), token: 1, seconds: 3) != nil)
        #expect(slots.table.tokenMemory.count == 2)
        // …so a fifth slot would need a third remembered token: refused, nothing forgotten.
        #expect(slots.claim(cell("e"), askedToken: 1, now: Self.at(seconds: 4)) == .full)
        #expect(slots[cell("c")] != nil && slots[cell("d")] != nil)
        // Once the oldest tokens' idle time is up, they lapse and there is room again.
        #expect(claimed(slots, cell("e"), token: 1, seconds: 700) != nil)
    }

    @Test func slotsInUseAreNeverForgotten() throws {
        let slots = table(maxSlots: 4, idleSeconds: 0)
        for index in 0..<4 {
            let slot = cell("s\(index)")
            _ = claimed(slots, slot)
            // Two wait on a job, two have bytes on their way to the gate.
            if index < 2 { slots.setLiveWaiter(.init(digest: "d\(index)", waiterID: UInt64(index)), of: slot) }
            else { slots.expectDelivery(to: slot) }
        }
        #expect(slots.claim(cell("new"), askedToken: nil, now: Self.at(seconds: 1_000)) == .full)
        #expect(slots.count == 4)
        // Once one is answered, there is room (it was idle past the 0 s bound).
        slots.clearLiveWaiter(of: cell("s0"), waiterID: 0)
        #expect(claimed(slots, cell("new"), seconds: 1_000) != nil)
        #expect(slots[cell("s0")] == nil)
        #expect((1..<4).allSatisfy { slots[cell("s\($0)")] != nil }, "the slots still in use stay")
        // Bytes let through the gate unpin their slot too.
        let s3 = try #require(slots[cell("s3")])
        #expect(slots.admitDelivery(to: cell("s3"), claim: s3.claim, token: s3.token) == .deliver)
        #expect(claimed(slots, cell("newer"), seconds: 2_000) != nil)
        #expect(slots[cell("s3")] == nil)
        #expect(slots[cell("s1")] != nil && slots[cell("s2")] != nil)
    }

    @Test func roomByBytesCountsTheIds() throws {
        let longName = String(repeating: "x", count: 300)
        let perSlot = cell(longName + "00").tableBytes
        let slots = table(maxSlots: 1_000, maxTableBytes: perSlot * 10)
        for index in 0..<10 { _ = claimed(slots, cell(longName + String(format: "%02d", index)), seconds: index) }
        #expect(slots.count == 10 && slots.tableBytes == perSlot * 10)
        // Full in bytes, not in count: the least recently used goes to make room.
        #expect(claimed(slots, cell("short"), seconds: 20) != nil)
        #expect(slots.tableBytes <= perSlot * 10)
        #expect(slots.tableBytes == slots.records.keys.reduce(0) { $0 + $1.tableBytes })
        #expect(slots[cell(longName + "00")] == nil, "the least recently used went")
        #expect(slots[cell(longName + "01")] != nil && slots[cell(longName + "09")] != nil)
    }
}

/// Holds a slot table for the tests: `#expect` cannot call a mutating method on a value it
/// captured, so the probe forwards each call to the table it owns.
final class SlotTableProbe {
    private(set) var table: SlotTable

    init(_ table: SlotTable) {
        self.table = table
    }

    var count: Int { table.count }
    var tableBytes: Int { table.tableBytes }
    var records: [SlotID: SlotTable.Record] { table.records }
    subscript(slot: SlotID) -> SlotTable.Record? { table[slot] }

    func claim(_ slot: SlotID, askedToken: UInt64?, now: ContinuousClock.Instant) -> SlotTable.Claim {
        table.claim(slot, askedToken: askedToken, now: now)
    }
    func setLiveWaiter(_ waiter: WaiterRef, of slot: SlotID) { table.setLiveWaiter(waiter, of: slot) }
    func release(_ slot: SlotID) -> (known: Bool, liveWaiter: WaiterRef?) { table.release(slot) }
    func clearLiveWaiter(of slot: SlotID, waiterID: UInt64) { table.clearLiveWaiter(of: slot, waiterID: waiterID) }
    func expectDelivery(to slot: SlotID) { table.expectDelivery(to: slot) }
    func admitDelivery(to slot: SlotID, claim: UInt64, token: UInt64?) -> SlotTable.Admission {
        table.admitDelivery(to: slot, claim: claim, token: token)
    }
}
