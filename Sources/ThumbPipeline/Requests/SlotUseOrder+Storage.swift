/// Storage of the slot list that never moves or rehashes every slot at once: a table of 100k
/// slots grown as one array and one dictionary stalled the claim that crossed a capacity
/// boundary for ~20 ms (all nodes moved, every slot id hashed again) under the pipeline's lock.

/// Nodes in fixed-size chunks: growing adds a chunk; no node is ever moved.
struct ChunkedNodes<Element> {
    private static var chunkShift: Int { 12 }
    private static var chunkCount: Int { 1 << chunkShift }
    private var chunks: [[Element?]] = []
    private(set) var count = 0

    subscript(position: Int) -> Element? {
        get { chunks[position >> Self.chunkShift][position & (Self.chunkCount - 1)] }
        _modify { yield &chunks[position >> Self.chunkShift][position & (Self.chunkCount - 1)] }
    }

    /// Adds an empty place at the end and returns its position.
    mutating func appendEmpty() -> Int {
        if count & (Self.chunkCount - 1) == 0 {
            var chunk: [Element?] = []
            chunk.reserveCapacity(Self.chunkCount)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(nil)
        count += 1
        return count - 1
    }

    mutating func removeAll() {
        chunks.removeAll()
        count = 0
    }

    func forEach(_ body: (Element) -> Void) {
        for chunk in chunks {
            for case let element? in chunk { body(element) }
        }
    }
}

/// A dictionary split in 16 by the key's hash: one part growing rehashes a sixteenth of the keys.
struct ShardedIndex<Key: Hashable, Value> {
    private static var shardCount: Int { 16 }
    private var shards = [[Key: Value]](repeating: [:], count: shardCount)
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    private static func shard(of key: Key) -> Int { key.hashValue & (shardCount - 1) }

    subscript(key: Key) -> Value? {
        get { shards[Self.shard(of: key)][key] }
        set {
            let shard = Self.shard(of: key)
            if let newValue {
                if shards[shard].updateValue(newValue, forKey: key) == nil { count += 1 }
            } else if shards[shard].removeValue(forKey: key) != nil {
                count -= 1
            }
        }
    }

    mutating func removeValue(forKey key: Key) -> Value? {
        let removed = shards[Self.shard(of: key)].removeValue(forKey: key)
        if removed != nil { count -= 1 }
        return removed
    }
}

extension ChunkedNodes: Sendable where Element: Sendable {}
extension ShardedIndex: Sendable where Key: Sendable, Value: Sendable {}
