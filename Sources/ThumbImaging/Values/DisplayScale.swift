/// A display scale, pixels per point: 1x to 4x. Every door (inline specs, config `scales`,
/// `?scale=`, prefetch bodies, jobs) parses into this type, so no other scale reaches the
/// pixel arithmetic.
package struct DisplayScale: Sendable, Hashable, Comparable, CustomStringConvertible {
    package static let range = 1...4
    /// What every refusal says about the range.
    package static let rangeDescription = "a whole number from 1 to 4"

    package let value: Int

    package init?(_ value: Int) {
        guard Self.range.contains(value) else { return nil }
        self.value = value
    }

    /// "1" to "4", with a trailing "x" when `allowsSuffix` ("2x" in `large@2x`). Nothing else:
    /// no sign, no leading zero, no spaces.
    package init?(text: some StringProtocol, allowsSuffix: Bool = false) {
        var utf8 = Array(text.utf8)
        if allowsSuffix, utf8.last == UInt8(ascii: "x") { utf8.removeLast() }
        guard utf8.count == 1, let digit = utf8.first, (UInt8(ascii: "1")...UInt8(ascii: "4")).contains(digit) else { return nil }
        value = Int(digit - UInt8(ascii: "0"))
    }

    /// A JSON number: whole and in range (1.5, 1e17, 0 and -5 are not scales).
    package init?(json number: Double) {
        guard let whole = CheckedConversion.wholeNumber(number, in: Self.range) else { return nil }
        value = whole
    }

    package static func < (lhs: DisplayScale, rhs: DisplayScale) -> Bool { lhs.value < rhs.value }
    package var description: String { "\(value)x" }
}
