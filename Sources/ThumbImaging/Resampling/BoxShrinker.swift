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
    /// Every `sampleStep`-th row and column of a block is read (1: all of them, an exact mean).
    let sampleStep: Int
    let outputWidth: Int
    let outputHeight: Int
    private(set) var output: FloatImage
    private var sums: [SIMD4<UInt32>]
    /// Blocks whose sums could pass 32 bits (premultiplied RGBA from 258 × 258 pixels, RGB from
    /// 4,105 × 4,105: a huge source shrunk into a small slot) carry each row's sums here; one
    /// row's part fits 32 bits (at most 65,500 pixels of at most 255²). Empty otherwise, the
    /// common case.
    private var wideSums: [SIMD4<UInt64>]
    private var rowsInBand = 0
    private var sampledRowsInBand = 0
    private var outputRow = 0
    private(set) var rowsConsumed = 0

    /// `sampleStep` above 1 estimates each block's mean from a sparse lattice of its pixels
    /// (for a placeholder, whose hash keeps only the lowest frequencies).
    init(sourceWidth: Int, sourceHeight: Int, channels: Int, factor: Int, sampleStep: Int = 1) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.channels = channels
        self.factor = max(1, factor)
        self.sampleStep = min(max(1, sampleStep), self.factor)
        outputWidth = (sourceWidth + self.factor - 1) / self.factor
        outputHeight = (sourceHeight + self.factor - 1) / self.factor
        output = FloatImage(width: outputWidth, height: outputHeight, hasAlpha: channels == 4, zeroed: false)
        sums = [SIMD4<UInt32>](repeating: .zero, count: outputWidth)
        // Samples a block side holds (a block never exceeds the source), times a sample's largest value.
        let side = UInt64((min(self.factor, max(sourceWidth, sourceHeight, 1)) + self.sampleStep - 1) / self.sampleStep)
        let (samples, tooMany) = side.multipliedReportingOverflow(by: side)
        let (largestBlockSum, tooLarge) = samples.multipliedReportingOverflow(by: channels == 4 ? 255 * 255 : 255)
        let wide = tooMany || tooLarge || largestBlockSum > UInt64(UInt32.max)
        wideSums = wide ? [SIMD4<UInt64>](repeating: .zero, count: outputWidth) : []
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
        if rowsInBand % sampleStep == 0 {
            sampledRowsInBand += 1
            sum(row: row)
            if !wideSums.isEmpty { carryRowSums() }
        }
        rowsInBand += 1
        if rowsInBand == factor || rowsConsumed == sourceHeight { emitBand() }
    }

    private func sum(row: UnsafePointer<UInt8>) {
        let step = sampleStep
        sums.withUnsafeMutableBufferPointer { sums in
            for block in 0..<outputWidth {
                var x = block * factor
                let end = min(x + factor, sourceWidth)
                var sum = SIMD4<UInt32>.zero
                if channels == 3 {
                    while x < end {
                        let source = row + x * 3
                        sum &+= SIMD4(UInt32(source[0]), UInt32(source[1]), UInt32(source[2]), 0)
                        x += step
                    }
                } else {
                    while x < end {
                        let source = row + x * 4
                        let alpha = UInt32(source[3])
                        sum &+= SIMD4(UInt32(source[0]) &* alpha, UInt32(source[1]) &* alpha, UInt32(source[2]) &* alpha, alpha)
                        x += step
                    }
                }
                sums[block] &+= sum
            }
        }
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

    /// Moves one row's 32-bit block sums into the 64-bit ones (`wideSums`).
    private func carryRowSums() {
        sums.withUnsafeMutableBufferPointer { sums in
            wideSums.withUnsafeMutableBufferPointer { wide in
                for x in 0..<outputWidth {
                    wide[x] &+= SIMD4<UInt64>(truncatingIfNeeded: sums[x])
                    sums[x] = .zero
                }
            }
        }
    }

    private func emitBand() {
        // Samples a block row holds: ceil(width / step).
        func samples(_ width: Int) -> Float { Float((width + sampleStep - 1) / sampleStep) }
        let blockHeight = Float(sampledRowsInBand)
        let lastBlockWidth = samples(sourceWidth - (outputWidth - 1) * factor)
        let fullBlockWidth = samples(factor)
        // Premultiplied sums carry alpha × colour (0...255²): one more 1/255 for the colour lanes.
        let lanes: SIMD4<Float> = channels == 4 ? SIMD4(1 / 255, 1 / 255, 1 / 255, 1) : SIMD4(1, 1, 1, 0)
        let opaque: SIMD4<Float> = channels == 4 ? .zero : SIMD4(0, 0, 0, 255)
        let base = outputRow * outputWidth
        output.pixels.withUnsafeMutableBufferPointer { pixels in
            sums.withUnsafeMutableBufferPointer { sums in
                wideSums.withUnsafeMutableBufferPointer { wide in
                    for x in 0..<outputWidth {
                        let area = (x == outputWidth - 1 ? lastBlockWidth : fullBlockWidth) * blockHeight
                        let sum = wide.isEmpty ? SIMD4<Float>(sums[x]) : SIMD4<Float>(wide[x])
                        pixels[base + x] = sum * (lanes / area) + opaque
                        sums[x] = .zero
                        if !wide.isEmpty { wide[x] = .zero }
                    }
                }
            }
        }
        rowsInBand = 0
        sampledRowsInBand = 0
        outputRow += 1
    }
}
