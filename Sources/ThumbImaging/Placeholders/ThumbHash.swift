#if canImport(Glibc)
import Glibc
#endif

/// A ThumbHash (Evan Wallace's placeholder format): the average colour, the aspect ratio and
/// alpha, and a few low-frequency DCT terms of luminance, two chroma channels and alpha, in at
/// most 25 bytes (5 of header, 1 of alpha, then 4-bit AC terms).
///
/// Written from the published description and checked bit for bit against an independent port
/// (the `thumbhash` package on PyPI, `ThumbHashTests`). The arithmetic is the reference's, in
/// the same order and in Double, so the same RGBA gives the same bytes; rounding is the
/// reference's `Math.round` (halves up), not banker's rounding.
package enum ThumbHash {
    /// Largest side the encoder takes: the reference's own limit (the image is shrunk first).
    package static let maxSidePixels = 100
    /// Longest hash `encode` returns: 6 header bytes (with alpha) and 38 four-bit AC terms.
    package static let maxBytes = 25

    package enum Failure: Error, Equatable, CustomStringConvertible {
        case badSize(width: Int, height: Int)
        case badBuffer(bytes: Int, expected: Int)

        package var description: String {
            switch self {
            case .badSize(let width, let height):
                "a ThumbHash needs 1...\(ThumbHash.maxSidePixels) pixels a side, got \(width)x\(height)"
            case .badBuffer(let bytes, let expected):
                "a ThumbHash needs \(expected) RGBA bytes, got \(bytes)"
            }
        }
    }

    /// The hash of `width`×`height` pixels of straight (not premultiplied) RGBA, 8 bits a channel.
    package static func encode(width: Int, height: Int, rgba: [UInt8]) throws(Failure) -> [UInt8] {
        guard (1...maxSidePixels).contains(width), (1...maxSidePixels).contains(height) else {
            throw .badSize(width: width, height: height)
        }
        let pixels = width * height
        guard rgba.count == pixels * 4 else { throw .badBuffer(bytes: rgba.count, expected: pixels * 4) }

        // The average colour, weighted by alpha.
        var averageR = 0.0, averageG = 0.0, averageB = 0.0, averageA = 0.0
        for pixel in 0..<pixels {
            let alpha = Double(rgba[pixel * 4 + 3]) / 255
            averageR += alpha / 255 * Double(rgba[pixel * 4])
            averageG += alpha / 255 * Double(rgba[pixel * 4 + 1])
            averageB += alpha / 255 * Double(rgba[pixel * 4 + 2])
            averageA += alpha
        }
        if averageA > 0 {
            averageR /= averageA
            averageG /= averageA
            averageB /= averageA
        }

        let hasAlpha = averageA < Double(pixels)
        let luminanceLimit = hasAlpha ? 5.0 : 7.0
        let longerSide = Double(max(width, height))
        let termsX = max(1, roundHalfUp(luminanceLimit * Double(width) / longerSide))
        let termsY = max(1, roundHalfUp(luminanceLimit * Double(height) / longerSide))

        // Luminance and chroma over the average colour where the image is transparent.
        var luminance = [Double](repeating: 0, count: pixels)
        var chromaP = luminance, chromaQ = luminance, opacity = luminance
        for pixel in 0..<pixels {
            let alpha = Double(rgba[pixel * 4 + 3]) / 255
            let r = averageR * (1 - alpha) + alpha / 255 * Double(rgba[pixel * 4])
            let g = averageG * (1 - alpha) + alpha / 255 * Double(rgba[pixel * 4 + 1])
            let b = averageB * (1 - alpha) + alpha / 255 * Double(rgba[pixel * 4 + 2])
            luminance[pixel] = (r + g + b) / 3
            chromaP[pixel] = (r + g) / 2 - b
            chromaQ[pixel] = r - g
            opacity[pixel] = alpha
        }

        let l = Channel(luminance, width: width, height: height, termsX: max(3, termsX), termsY: max(3, termsY))
        let p = Channel(chromaP, width: width, height: height, termsX: 3, termsY: 3)
        let q = Channel(chromaQ, width: width, height: height, termsX: 3, termsY: 3)
        let a = hasAlpha ? Channel(opacity, width: width, height: height, termsX: 5, termsY: 5) : nil

        let isLandscape = width > height
        let header24 = roundHalfUp(63 * l.dc) | (roundHalfUp(31.5 + 31.5 * p.dc) << 6) | (roundHalfUp(31.5 + 31.5 * q.dc) << 12)
            | (roundHalfUp(31 * l.scale) << 18) | ((hasAlpha ? 1 : 0) << 23)
        let header16 = (isLandscape ? termsY : termsX) | (roundHalfUp(63 * p.scale) << 3) | (roundHalfUp(63 * q.scale) << 9)
            | ((isLandscape ? 1 : 0) << 15)
        var hash: [UInt8] = [UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16),
                             UInt8(header16 & 255), UInt8(header16 >> 8)]
        if let a { hash.append(UInt8(roundHalfUp(15 * a.dc) | (roundHalfUp(15 * a.scale) << 4))) }

        // AC terms, 4 bits each, low nibble first.
        var nibbles = 0
        for channel in [l, p, q] + (a.map { [$0] } ?? []) {
            for term in channel.ac {
                let nibble = UInt8(roundHalfUp(15 * term))
                if nibbles & 1 == 0 { hash.append(nibble) } else { hash[hash.count - 1] |= nibble << 4 }
                nibbles += 1
            }
        }
        return hash
    }

    /// JavaScript's `Math.round` on the bounded values here (every one lies in 0...63); clamped
    /// rather than trapping should a value ever fall outside Int.
    static func roundHalfUp(_ value: Double) -> Int {
        CheckedConversion.clampedInteger(value + 0.5, rounding: .down, to: Int(Int32.min)...Int(Int32.max))
    }

    /// One channel's DCT terms below the triangle `cx * ny < nx * (ny - cy)`: the DC term, the
    /// AC terms scaled into 0...1 by the largest one's magnitude, and that magnitude.
    struct Channel {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0

        init(_ values: [Double], width: Int, height: Int, termsX: Int, termsY: Int) {
            // The reference sums one term at a time, each a chain of dependent additions; here
            // every term's sum advances in one pass over the pixels. Each sum still adds the same
            // products in the same order, so the bytes are the reference's; the chains overlap
            // (a 100-px placeholder's hash was about 1% of an avatar's render).
            var terms: [(cx: Int, cy: Int)] = []
            for cy in 0..<termsY {
                var cx = 0
                while cx * termsY < termsX * (termsY - cy) {
                    terms.append((cx, cy))
                    cx += 1
                }
            }
            let columns = terms.map(\.cx).max().map { $0 + 1 } ?? 1
            var cosinesX = [Double](repeating: 0, count: columns * width)
            for cx in 0..<columns {
                for x in 0..<width { cosinesX[cx * width + x] = cos(Double.pi / Double(width) * Double(cx) * (Double(x) + 0.5)) }
            }
            var cosinesY = [Double](repeating: 0, count: termsY * height)
            for cy in 0..<termsY {
                for y in 0..<height { cosinesY[cy * height + y] = cos(Double.pi / Double(height) * Double(cy) * (Double(y) + 0.5)) }
            }
            var sums = [Double](repeating: 0, count: terms.count)
            let xOffsets = terms.map { $0.cx * width }, yOffsets = terms.map { $0.cy * height }
            values.withUnsafeBufferPointer { values in
                cosinesX.withUnsafeBufferPointer { cosinesX in
                    cosinesY.withUnsafeBufferPointer { cosinesY in
                        sums.withUnsafeMutableBufferPointer { sums in
                            for y in 0..<height {
                                for x in 0..<width {
                                    let value = values[x + y * width]
                                    for term in 0..<sums.count {
                                        sums[term] += value * cosinesX[xOffsets[term] + x] * cosinesY[yOffsets[term] + y]
                                    }
                                }
                            }
                        }
                    }
                }
            }
            for (term, (cx, cy)) in terms.enumerated() {
                let sum = sums[term] / Double(width * height)
                if cx > 0 || cy > 0 {
                    ac.append(sum)
                    scale = max(scale, abs(sum))
                } else {
                    dc = sum
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        }
    }
}
