/// A slot's generation counter: clients send one (`token=`), the pipeline issues the next when
/// they do not. Bounded so that neither side's arithmetic can overflow.
package enum SlotToken {
    /// The largest token a client may send or the pipeline issue: 2^53 − 1, the largest whole
    /// number a JSON client (JavaScript) holds exactly, since tokens go out in JSON too.
    package static let maximum: UInt64 = (1 << 53) - 1
    package static let range: ClosedRange<UInt64> = 0...maximum
    /// How far one claim may move a slot's token forward: a caller that names a huge token
    /// would otherwise make every later request of the slot's real user late (409) for good.
    package static let maximumStep: UInt64 = 1 << 16

    /// The token after `current`, never past `maximum` (nor past `current` if a caller in code
    /// already went beyond it). A slot stuck at the maximum still works: the newer request takes
    /// the slot whatever the tokens, only a late request with a lower token is refused.
    static func issued(after current: UInt64) -> UInt64 {
        current < maximum ? current + 1 : current
    }
}

extension SlotID {
    /// Longest client name and longest slot id, bytes (each).
    package static let maxPartBytes = 256

    /// Bytes the slot table is charged for remembering this slot: its ids plus an estimate of
    /// the fixed cost of an entry (the dictionary slot, the record, the string headers).
    var tableBytes: Int { owner.utf8.count + client.utf8.count + slot.utf8.count + 192 }
}
