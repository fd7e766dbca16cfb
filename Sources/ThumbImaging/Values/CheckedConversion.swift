/// The one way a `Double` becomes an integer. `Int(someDouble)` traps on NaN, on ±infinity and
/// past ±9.2e18, and a Double that came from input (a config value, a spec, a JSON number, or
/// arithmetic on one) can be any of those, so no other code converts.
package enum CheckedConversion {
    /// `value` rounded by `rule`, when it is finite and the result lies in `range`; else nil.
    package static func integer(_ value: Double, rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero,
                               in range: ClosedRange<Int> = Int.min...Int.max) -> Int? {
        guard value.isFinite, let whole = Int(exactly: value.rounded(rule)), range.contains(whole) else { return nil }
        return whole
    }

    /// `value` rounded by `rule` and clamped into `range` (NaN gives the lower bound). For sizes a
    /// door has already bounded: clamping only guards against a caller that skipped the door.
    package static func clampedInteger(_ value: Double, rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero,
                                      to range: ClosedRange<Int>) -> Int {
        guard !value.isNaN else { return range.lowerBound }
        let rounded = value.rounded(rule)
        if rounded <= Double(range.lowerBound) { return range.lowerBound }
        if rounded >= Double(range.upperBound) { return range.upperBound }
        // Strictly between two Ints, so representable.
        return Int(exactly: rounded) ?? range.upperBound
    }

    /// A JSON number that must be a whole number in `range` (1.5, 1e17 and -0.5 are not).
    package static func wholeNumber(_ value: Double, in range: ClosedRange<Int>) -> Int? {
        guard value.isFinite, value == value.rounded() else { return nil }
        return integer(value, in: range)
    }
}

/// Text from outside, shortened for a message: a 10 MB asset name must not become 10 MB of log.
package enum DisplayText {
    /// At most `maxBytes` bytes of `text` (cut at a character boundary), with a marker giving the
    /// full size when something was cut.
    package static func truncated(_ text: some StringProtocol, maxBytes: Int = 200) -> String {
        let utf8 = text.utf8
        guard utf8.count > maxBytes else { return String(text) }
        var kept = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            guard bytes + size <= maxBytes else { break }
            kept.append(character)
            bytes += size
        }
        return kept + "…[\(utf8.count) bytes]"
    }
}
