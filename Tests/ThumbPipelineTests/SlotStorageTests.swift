import Testing
@testable import ThumbPipeline

/// The slot list's storage (`SlotUseOrder+Storage`): the same answers as an array and a
/// dictionary, across chunk boundaries and through removals.
@Suite struct SlotStorageTests {
    @Test("chunked nodes keep every value in place across chunk boundaries")
    func chunkedNodesKeepPositions() {
        var nodes = ChunkedNodes<Int>()
        for value in 0..<10_000 {
            let position = nodes.appendEmpty()
            #expect(position == value)
            nodes[position] = value * 3
        }
        #expect(nodes.count == 10_000)
        nodes[4095] = nil
        nodes[4096]? += 1
        var seen = 0, sum = 0
        nodes.forEach { seen += 1; sum += $0 }
        #expect(seen == 9_999)
        #expect(sum == (0..<10_000).reduce(0) { $0 + $1 * 3 } - 4095 * 3 + 1)
        #expect(nodes[9_999] == 29_997 && nodes[4096] == 4096 * 3 + 1 && nodes[4095] == nil)
        nodes.removeAll()
        #expect(nodes.count == 0 && nodes.appendEmpty() == 0)
    }

    @Test("the sharded index answers as one dictionary and counts what it holds")
    func shardedIndexMatchesADictionary() {
        var index = ShardedIndex<SlotID, Int>()
        var reference: [SlotID: Int] = [:]
        for number in 0..<5_000 {
            let slot = SlotID(client: "c\(number % 7)", slot: "s\(number)")
            index[slot] = number
            reference[slot] = number
            if number % 3 == 0 {
                let gone = SlotID(client: "c\((number / 2) % 7)", slot: "s\(number / 2)")
                #expect(index.removeValue(forKey: gone) == reference.removeValue(forKey: gone))
            }
            if number % 5 == 0 { index[slot] = nil; reference[slot] = nil }
        }
        #expect(index.count == reference.count && !index.isEmpty)
        for (slot, value) in reference { #expect(index[slot] == value) }
        #expect(index[SlotID(client: "c0", slot: "none")] == nil)
    }
}
