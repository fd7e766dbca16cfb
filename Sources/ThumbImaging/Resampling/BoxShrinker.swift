/// Streaming integer block shrink: source rows go in one at a time, each `factor` × `factor`
/// block comes out as one premultiplied float pixel. Memory is one accumulator row plus the
/// (small) output, never the source: this is what lets a PNG stream through in a few rows.
///
/// The last block of a row or column may be partial; it is averaged over the pixels it has.
final class BoxShrinker {
    let sourceWidth: Int
    let sourceHeight: Int
    let channels: Int
    let factor: Int
    let outputWidth: Int
    let outputHeight: Int
    private(set) var output: FloatImage
    private var accumulator: [UInt32]
    private var rowsInBand = 0
    private var outputRow = 0
    private(set) var rowsConsumed = 0

    /// `channels` is 3 (RGB) or 4 (RGBA, straight alpha: premultiplied while summing).
    init(sourceWidth: Int, sourceHeight: Int, channels: Int, factor: Int) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.channels = channels
        self.factor = max(1, factor)
        outputWidth = (sourceWidth + self.factor - 1) / self.factor
        outputHeight = (sourceHeight + self.factor - 1) / self.factor
        output = FloatImage(width: outputWidth, height: outputHeight, channels: channels)
        accumulator = [UInt32](repeating: 0, count: outputWidth * channels)
    }

    var isComplete: Bool { rowsConsumed >= sourceHeight }

    /// Adds `count` source rows starting at `rows`, `rowStride` bytes apart.
    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride: Int) {
        for index in 0..<count where rowsConsumed < sourceHeight {
            consume(row: rows + index * rowStride)
        }
    }

    private func consume(row: UnsafePointer<UInt8>) {
        rowsConsumed += 1
        accumulator.withUnsafeMutableBufferPointer { sums in
            let sums = sums.baseAddress!
            if channels == 3 {
                Self.accumulateRGB(row: row, width: sourceWidth, factor: factor, into: sums)
            } else {
                Self.accumulateRGBA(row: row, width: sourceWidth, factor: factor, into: sums)
            }
        }
        rowsInBand += 1
        if rowsInBand == factor || rowsConsumed == sourceHeight { emitBand() }
    }

    private static func accumulateRGB(row: UnsafePointer<UInt8>, width: Int, factor: Int,
                                      into sums: UnsafeMutablePointer<UInt32>) {
        var source = row
        var x = 0
        var block = 0
        while x < width {
            let end = min(x + factor, width)
            var r: UInt32 = 0, g: UInt32 = 0, b: UInt32 = 0
            while x < end {
                r &+= UInt32(source[0]); g &+= UInt32(source[1]); b &+= UInt32(source[2])
                source += 3
                x += 1
            }
            sums[block] &+= r; sums[block + 1] &+= g; sums[block + 2] &+= b
            block += 3
        }
    }

    private static func accumulateRGBA(row: UnsafePointer<UInt8>, width: Int, factor: Int,
                                       into sums: UnsafeMutablePointer<UInt32>) {
        var source = row
        var x = 0
        var block = 0
        while x < width {
            let end = min(x + factor, width)
            var r: UInt32 = 0, g: UInt32 = 0, b: UInt32 = 0, a: UInt32 = 0
            while x < end {
                let alpha = UInt32(source[3])
                r &+= UInt32(source[0]) &* alpha; g &+= UInt32(source[1]) &* alpha
                b &+= UInt32(source[2]) &* alpha; a &+= alpha
                source += 4
                x += 1
            }
            sums[block] &+= r; sums[block + 1] &+= g; sums[block + 2] &+= b; sums[block + 3] &+= a
            block += 4
        }
    }

    private func emitBand() {
        let blockHeight = rowsInBand
        let channels = self.channels
        let lastBlockWidth = sourceWidth - (outputWidth - 1) * factor
        let base = outputRow * outputWidth * channels
        output.samples.withUnsafeMutableBufferPointer { out in
            accumulator.withUnsafeMutableBufferPointer { sums in
                for x in 0..<outputWidth {
                    let pixels = Float((x == outputWidth - 1 ? lastBlockWidth : factor) * blockHeight)
                    let colourScale = channels == 4 ? 1 / (pixels * 255) : 1 / pixels
                    let at = x * channels
                    for channel in 0..<3 {
                        out[base + at + channel] = Float(sums[at + channel]) * colourScale
                    }
                    if channels == 4 { out[base + at + 3] = Float(sums[at + 3]) / pixels }
                    for channel in 0..<channels { sums[at + channel] = 0 }
                }
            }
        }
        rowsInBand = 0
        outputRow += 1
    }
}
