/// Streaming integer block shrink: source rows go in one at a time, each `factor` × `factor`
/// block comes out as one premultiplied float pixel. Memory is one accumulator row plus the
/// (small) output, never the source: this is what lets a PNG stream through in a few rows.
///
/// The last block of a row or column may be partial; it is averaged over the pixels it has.
final class BoxShrinker {
    let sourceWidth: Int
    let sourceHeight: Int
    /// Bytes a source pixel: 3 (RGB) or 4 (RGBA, straight alpha: premultiplied while summing).
    let channels: Int
    let factor: Int
    let outputWidth: Int
    let outputHeight: Int
    private(set) var output: FloatImage
    private var sums: [SIMD4<UInt32>]
    private var rowsInBand = 0
    private var outputRow = 0
    private(set) var rowsConsumed = 0

    init(sourceWidth: Int, sourceHeight: Int, channels: Int, factor: Int) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.channels = channels
        self.factor = max(1, factor)
        outputWidth = (sourceWidth + self.factor - 1) / self.factor
        outputHeight = (sourceHeight + self.factor - 1) / self.factor
        output = FloatImage(width: outputWidth, height: outputHeight, hasAlpha: channels == 4, zeroed: false)
        sums = [SIMD4<UInt32>](repeating: .zero, count: outputWidth)
    }

    var isComplete: Bool { rowsConsumed >= sourceHeight }

    /// Adds `count` source rows starting at `rows`, `rowStride` bytes apart.
    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride: Int) {
        for index in 0..<count where rowsConsumed < sourceHeight {
            consume(row: rows + index * rowStride)
        }
    }

    private func consume(row: UnsafePointer<UInt8>) {
        if factor == 1 { return copy(row: row) }
        rowsConsumed += 1
        sums.withUnsafeMutableBufferPointer { sums in
            var source = row
            var x = 0
            for block in 0..<outputWidth {
                let end = min(x + factor, sourceWidth)
                var sum = SIMD4<UInt32>.zero
                if channels == 3 {
                    while x < end {
                        sum &+= SIMD4(UInt32(source[0]), UInt32(source[1]), UInt32(source[2]), 0)
                        source += 3
                        x += 1
                    }
                } else {
                    while x < end {
                        let alpha = UInt32(source[3])
                        sum &+= SIMD4(UInt32(source[0]) &* alpha, UInt32(source[1]) &* alpha, UInt32(source[2]) &* alpha, alpha)
                        source += 4
                        x += 1
                    }
                }
                sums[block] &+= sum
            }
        }
        rowsInBand += 1
        if rowsInBand == factor || rowsConsumed == sourceHeight { emitBand() }
    }

    /// Factor 1: no block to sum, just widen (and premultiply) straight into the output row.
    private func copy(row: UnsafePointer<UInt8>) {
        let base = rowsConsumed * outputWidth
        output.pixels.withUnsafeMutableBufferPointer { pixels in
            let out = pixels.baseAddress! + base
            if channels == 3 {
                for x in 0..<outputWidth {
                    out[x] = SIMD4(Float(row[x * 3]), Float(row[x * 3 + 1]), Float(row[x * 3 + 2]), 255)
                }
            } else {
                for x in 0..<outputWidth {
                    let alpha = Float(row[x * 4 + 3])
                    let colour = SIMD4(Float(row[x * 4]), Float(row[x * 4 + 1]), Float(row[x * 4 + 2]), 255)
                    out[x] = colour * (alpha / 255)
                }
            }
        }
        rowsConsumed += 1
        outputRow += 1
    }

    private func emitBand() {
        let blockHeight = Float(rowsInBand)
        let lastBlockWidth = Float(sourceWidth - (outputWidth - 1) * factor)
        let fullBlockWidth = Float(factor)
        // Premultiplied sums carry alpha × colour (0...255²): one more 1/255 for the colour lanes.
        let lanes: SIMD4<Float> = channels == 4 ? SIMD4(1 / 255, 1 / 255, 1 / 255, 1) : SIMD4(1, 1, 1, 0)
        let opaque: SIMD4<Float> = channels == 4 ? .zero : SIMD4(0, 0, 0, 255)
        let base = outputRow * outputWidth
        output.pixels.withUnsafeMutableBufferPointer { pixels in
            sums.withUnsafeMutableBufferPointer { sums in
                for x in 0..<outputWidth {
                    let area = (x == outputWidth - 1 ? lastBlockWidth : fullBlockWidth) * blockHeight
                    pixels[base + x] = SIMD4<Float>(sums[x]) * (lanes / area) + opaque
                    sums[x] = .zero
                }
            }
        }
        rowsInBand = 0
        outputRow += 1
    }
}
