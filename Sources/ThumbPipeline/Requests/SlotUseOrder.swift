/// The slot records in order of last use: a doubly linked list threaded through chunks of
/// nodes (freed nodes reused), with a sharded dictionary from slot to node (neither ever moves or
/// rehashes every slot at once: see `+Storage`). Moving a slot to the new end,
/// reading the old end, inserting and removing are O(1); nothing is ever sorted.
struct SlotUseOrder {
    private struct Node {
        var slot: SlotID
        var record: SlotTable.Record
        /// Neighbours by last use; -1 at either end.
        var older: Int
        var newer: Int
    }

    private var nodes = ChunkedNodes<Node>()
    private var freeNodes: [Int] = []
    private var index = ShardedIndex<SlotID, Int>()
    private var oldestNode = -1
    private var newestNode = -1

    var count: Int { index.count }

    /// The record of `slot`; setting one changes a known slot only (use `insertNewest` to add).
    subscript(slot: SlotID) -> SlotTable.Record? {
        get { index[slot].flatMap { nodes[$0]?.record } }
        set {
            guard let newValue, let node = index[slot] else { return }
            nodes[node]?.record = newValue
        }
    }

    mutating func update(_ slot: SlotID, _ change: (inout SlotTable.Record) -> Void) {
        guard let node = index[slot], var record = nodes[node]?.record else { return }
        change(&record)
        nodes[node]?.record = record
    }

    /// The least recently used slot.
    var oldest: (slot: SlotID, record: SlotTable.Record)? {
        guard oldestNode >= 0, let node = nodes[oldestNode] else { return nil }
        return (node.slot, node.record)
    }

    mutating func insertNewest(_ slot: SlotID, _ record: SlotTable.Record) {
        let node: Int
        if let reused = freeNodes.popLast() {
            node = reused
        } else {
            node = nodes.appendEmpty()
        }
        nodes[node] = Node(slot: slot, record: record, older: newestNode, newer: -1)
        index[slot] = node
        link(node)
    }

    mutating func moveToNewest(_ slot: SlotID) {
        guard let node = index[slot], node != newestNode else { return }
        unlink(node)
        link(node)
    }

    @discardableResult
    mutating func remove(_ slot: SlotID) -> SlotTable.Record? {
        guard let node = index.removeValue(forKey: slot) else { return nil }
        unlink(node)
        let record = nodes[node]?.record
        nodes[node] = nil
        freeNodes.append(node)
        // A table that shrank a lot gives its node array back.
        if index.isEmpty {
            nodes.removeAll()
            freeNodes.removeAll()
        }
        return record
    }

    /// Every record, for tests and diagnostics (O(n)).
    var all: [SlotID: SlotTable.Record] {
        var records: [SlotID: SlotTable.Record] = [:]
        nodes.forEach { records[$0.slot] = $0.record }
        return records
    }

    /// Links `node` in at the new end.
    private mutating func link(_ node: Int) {
        nodes[node]?.older = newestNode
        nodes[node]?.newer = -1
        if newestNode >= 0 { nodes[newestNode]?.newer = node }
        newestNode = node
        if oldestNode < 0 { oldestNode = node }
    }

    private mutating func unlink(_ node: Int) {
        guard let (older, newer) = nodes[node].map({ ($0.older, $0.newer) }) else { return }
        if older >= 0 { nodes[older]?.newer = newer } else { oldestNode = newer }
        if newer >= 0 { nodes[newer]?.older = older } else { newestNode = older }
        nodes[node]?.older = -1
        nodes[node]?.newer = -1
    }
}

/// The tokens of slots trimmed at the table's bounds before their idle time was up, so that a
/// request coming back for such a slot meets its rule again (a late token is still late) instead
/// of a slot at token 0. Kept by the slot's hash (8 bytes instead of its ids: a collision between
/// two live 64-bit hashes is ~10⁻⁹ at a million slots, and would only start one new slot at the
/// other's token), until the slot's idle time would have been up, at most `capacity` of them.
struct SlotTokenMemory {
    private struct Remembered {
        var token: UInt64
        var lastUse: ContinuousClock.Instant
    }

    let capacity: Int
    private var tokens: [Int: Remembered] = [:]
    /// Keys in the order they were remembered (which is last-use order: slots are trimmed from
    /// the old end); an entry whose key was taken or remembered again since is stale and skipped.
    private var arrivals: [(key: Int, lastUse: ContinuousClock.Instant)] = []
    private var head = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { tokens.count }

    /// Remembers `slot`'s token; false when full of tokens that may not lapse before `cutoff`.
    mutating func remember(_ slot: SlotID, token: UInt64, lastUse: ContinuousClock.Instant,
                           lapsingBefore cutoff: ContinuousClock.Instant) -> Bool {
        // A slot at token 0 has nothing to remember: a new slot starts there anyway.
        guard token > 0 else { return true }
        if tokens.count >= capacity { expire(before: cutoff, limit: SlotTable.expiriesPerClaim) }
        guard tokens.count < capacity else { return false }
        let key = slot.hashValue
        tokens[key] = Remembered(token: token, lastUse: lastUse)
        arrivals.append((key, lastUse))
        compactIfNeeded()
        return true
    }

    /// The token `slot` left behind, forgotten now that the slot is back in the table.
    mutating func take(_ slot: SlotID) -> UInt64? {
        tokens.removeValue(forKey: slot.hashValue)?.token
    }

    /// Forgets up to `limit` tokens of slots last used before `cutoff`.
    mutating func expire(before cutoff: ContinuousClock.Instant, limit: Int) {
        var steps = 0
        while steps < limit, head < arrivals.count, arrivals[head].lastUse <= cutoff {
            let (key, lastUse) = arrivals[head]
            if tokens[key]?.lastUse == lastUse { tokens[key] = nil }
            head += 1
            steps += 1
        }
        compactIfNeeded()
    }

    /// Drops consumed and stale arrivals once they are most of the array, so that it stays
    /// within twice the capacity (amortized O(1) per arrival).
    private mutating func compactIfNeeded() {
        if head > 0 && head >= arrivals.count / 2 {
            arrivals.removeFirst(head)
            head = 0
        }
        if arrivals.count > 2 * capacity + 16 {
            arrivals = arrivals.filter { tokens[$0.key]?.lastUse == $0.lastUse }
            head = 0
        }
    }
}
