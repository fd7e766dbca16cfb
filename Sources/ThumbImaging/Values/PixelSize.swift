/// A size in pixels whose sides are each 1 ... `SlotBounds.maxPixelsPerSide`, so that the
/// product and any per-pixel byte count fit an Int with room to spare.
package struct PixelSize: Sendable, Hashable, CustomStringConvertible {
    package let width: Int
    package let height: Int

    package init?(width: Int, height: Int) {
        let sides = 1...SlotBounds.maxPixelsPerSide
        guard sides.contains(width), sides.contains(height) else { return nil }
        self.width = width
        self.height = height
    }

    /// `points` × `scale`, rounded; nil when a side is not finite or rounds outside
    /// 1 ... `SlotBounds.maxPixelsPerSide` (a 1e-300-point kind is as wrong as a 1e19-point one).
    package init?(widthPoints: Double, heightPoints: Double, scale: Int) {
        let sides = 1...SlotBounds.maxPixelsPerSide
        guard let width = CheckedConversion.integer(widthPoints * Double(scale), in: sides),
              let height = CheckedConversion.integer(heightPoints * Double(scale), in: sides) else { return nil }
        self.init(width: width, height: height)
    }

    package var pixelCount: Int { width * height }
    package var description: String { "\(width)x\(height) px" }
}

/// The bounds every slot kind is held to, wherever it comes from (config, inline spec, job).
package enum SlotBounds {
    /// Longest side of a kind, points (the same length in pixels at 1x).
    package static let maxSidePoints = 8192
    package static var maxPoints: Double { Double(maxSidePoints) }
    /// Longest side of an output, pixels.
    package static let maxPixelsPerSide = 8192
    /// Longest kind name or inline spec, bytes.
    package static let maxTextBytes = 256
    /// The largest `limits.maxOutputPixels` a config may set (8192 × 8192).
    package static let outputPixelsCeiling = 8192 * 8192

    /// A length in points as an inline spec writes it: plain decimal digits with an optional
    /// fraction (`48`, `12.5`): no sign, exponent, hex, `inf` or `nan`.
    static func decimal(_ text: some StringProtocol) -> Double? {
        let utf8 = Array(text.utf8)
        guard (1...16).contains(utf8.count), let first = utf8.first, let last = utf8.last,
              isDigit(first), isDigit(last), utf8.filter({ $0 == UInt8(ascii: ".") }).count <= 1,
              utf8.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: ".") }) else { return nil }
        return Double(String(decoding: utf8, as: UTF8.self))
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// Whether `points` is a usable side length: finite, above 0, at most `maxPoints`.
    static func isSide(_ points: Double) -> Bool { points.isFinite && points > 0 && points <= maxPoints }
}
