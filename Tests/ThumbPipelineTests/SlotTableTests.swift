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

    @Test func claimsStayDistinctWhenTheTokenSaturates() throws {
        let slots = table()
        let a = cell("a")
        let first = try #require(claimed(slots, a, token: .max))
        let second = try #require(claimed(slots, a))
        #expect(second.token == .max)
        #expect(second.claim > first.claim)
        slots.expectDelivery(to: a)
        // Bytes decided for the first request are refused although its token equals the slot's.
        #expect(slots.admitDelivery(to: a, claim: first.claim, token: .max) == .superseded(currentToken: .max))
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
        #expect(slots[a]?.token == second.token, "a release keeps the token")
        #expect(slots[a]?.pendingDeliveries == 0)
        #expect(slots.release(cell("unknown")) == (false, nil))
    }

    @Test func roomByCountForgetsTheLeastRecentlyUsedIdleSlots() throws {
        let slots = table(maxSlots: 10)
        for index in 0..<10 { _ = claimed(slots, cell("s\(index)"), seconds: index) }
        #expect(slots.count == 10)
        #expect(claimed(slots, cell("new"), seconds: 20) != nil)
        // Down to 90% of the bound before the new one: the two oldest went.
        #expect(slots.count == 9)
        #expect(slots[cell("s0")] == nil && slots[cell("s1")] == nil)
        #expect((2..<10).allSatisfy { slots[cell("s\($0)")] != nil } && slots[cell("new")] != nil)
    }

    @Test func idleSlotsGoFirstAndOnlyWhenThereIsNoRoom() throws {
        let slots = table(maxSlots: 10, idleSeconds: 60)
        for index in 0..<5 { _ = claimed(slots, cell("old\(index)"), seconds: 0) }
        for index in 0..<4 { _ = claimed(slots, cell("recent\(index)"), seconds: 100) }
        // Room left: nothing is forgotten, however idle.
        #expect(claimed(slots, cell("ninth"), seconds: 110) != nil)
        #expect(slots.count == 10)
        // Full: every slot idle past 60 s goes, the recent ones all stay.
        #expect(claimed(slots, cell("tenth"), seconds: 120) != nil)
        #expect(slots.count == 6)
        #expect((0..<5).allSatisfy { slots[cell("old\($0)")] == nil })
        #expect((0..<4).allSatisfy { slots[cell("recent\($0)")] != nil })
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
        // Full in bytes, not in count: the least recently used go, down to 90% of the bytes.
        #expect(claimed(slots, cell("short"), seconds: 20) != nil)
        #expect(slots.tableBytes <= perSlot * 10)
        #expect(slots.tableBytes == slots.records.keys.reduce(0) { $0 + $1.tableBytes })
        #expect(slots[cell(longName + "00")] == nil, "the least recently used went")
        #expect(slots[cell(longName + "09")] != nil)
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
