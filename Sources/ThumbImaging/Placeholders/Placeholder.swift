import Foundation

/// What a cell shows before its thumbnail arrives: the asset's ThumbHash and its average colour,
/// computed from the image shrunk to at most `ThumbHash.maxSidePixels` during a decode.
package struct Placeholder: Sendable, Equatable {
    /// A ThumbHash (`ThumbHash.encode`), at most `ThumbHash.maxBytes` bytes.
    package var thumbHash: [UInt8]
    /// The mean colour, sRGB, straight alpha, weighted by alpha (what a cell paints at once).
    package var averageRed: UInt8
    package var averageGreen: UInt8
    package var averageBlue: UInt8
    package var averageAlpha: UInt8

    package init(thumbHash: [UInt8], averageRed: UInt8, averageGreen: UInt8, averageBlue: UInt8, averageAlpha: UInt8) {
        self.thumbHash = thumbHash
        self.averageRed = averageRed
        self.averageGreen = averageGreen
        self.averageBlue = averageBlue
        self.averageAlpha = averageAlpha
    }

    /// `#rrggbbaa`, lower-case hex (CSS Color 4).
    package var averageColorHex: String {
        "#" + [averageRed, averageGreen, averageBlue, averageAlpha].map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }

    /// The ThumbHash in standard base64 with padding (what the reference's JS decoder takes).
    package var thumbHashBase64: String { Data(thumbHash).base64EncodedString() }
}

/// Whether a decode computes its source's placeholder (`ThumbnailSet.placeholder`).
package enum PlaceholderDemand: UInt8, Sendable, CaseIterable {
    /// Not wanted (the version has one).
    case skip = 0
    /// Only if the decode reads the whole frame anyway. The placeholder needs every column, and
    /// a JPEG fill crop that libjpeg could narrow to its own columns would decode the rest for
    /// it alone: +3–7% of a client's render on the corpus's photos (crop-bench), against a few
    /// tenths of a percent from a frame decoded whole anyway.
    case ifWholeFrame = 1
    /// Whatever it costs (pre-rendering, batch, a placeholder look-up: no client waits on the decode).
    case always = 2
}
