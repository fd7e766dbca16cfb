/// The Lanczos step fed with decoded 8-bit RGB rows as they come, for an output that needs no
/// block shrink: each row a vertical tap reads goes through the horizontal pass at once and is
/// added into the output rows it weighs on, so neither the decoded frame nor the horizontally
/// resampled one is ever held (a JPEG decoded at 1/4 for `large` is a 1000x750 frame: 12 MB of
/// float pixels before, written, faulted in and read back; 3 MB more after the horizontal pass).
/// The arithmetic and its order are those of `BoxShrinker` at factor 1 followed by
/// `Lanczos3.resample` (each output sums its vertical taps in row order, as rows arrive), so the
/// pixels are the same.
final class RowResampler {
    let sourceWidth: Int
    let sourceHeight: Int
    let outputWidth: Int
    let outputHeight: Int
    private let horizontal: Lanczos3.Taps
    private let vertical: Lanczos3.Taps
    private var result: FloatImage
    private var widened: [SIMD4<Float>]
    private var resampled: [SIMD4<Float>]
    /// The output rows that the next source rows may weigh on start here (taps move down with y).
    private var firstOpenRow = 0
    private(set) var rowsConsumed = 0
    /// The source columns some horizontal tap reads: a decoder may hand over just these.
    let columnsRead: Range<Int>
    /// The columns the rows consumed hold (all of them unless `receive(columns:)` narrowed it).
    private(set) var columns: Range<Int>

    init(sourceWidth: Int, sourceHeight: Int, region: Lanczos3.Region, outputWidth: Int, outputHeight: Int) {
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        horizontal = Lanczos3.taps(sourceSize: sourceWidth, start: region.x, length: region.width, outputSize: outputWidth)
        vertical = Lanczos3.taps(sourceSize: sourceHeight, start: region.y, length: region.height, outputSize: outputHeight)
        result = FloatImage(width: outputWidth, height: outputHeight, hasAlpha: false)
        widened = [SIMD4<Float>](repeating: .zero, count: sourceWidth)
        resampled = [SIMD4<Float>](repeating: .zero, count: outputWidth)
        var low = sourceWidth, high = 0
        for x in horizontal.first.indices {
            low = min(low, Int(horizontal.first[x]))
            high = max(high, Int(horizontal.first[x] + horizontal.count[x]))
        }
        columnsRead = high <= low ? 0..<0 : low..<high
        columns = 0..<sourceWidth
    }

    /// The rows to come hold only `columns` of the source (which must cover `columnsRead`); the
    /// taps stay those of the whole row, so the pixels do not change. Before the first row.
    func receive(columns: Range<Int>) {
        precondition(rowsConsumed == 0 && columns.lowerBound >= 0 && columns.upperBound <= sourceWidth
                     && columns.lowerBound <= columnsRead.lowerBound && columns.upperBound >= columnsRead.upperBound,
                     "columns \(columns) do not cover the taps' \(columnsRead) of \(sourceWidth)")
        self.columns = columns
    }

    var isComplete: Bool { rowsConsumed >= sourceHeight }

    /// Float pixels held: the output, one widened source row and one horizontally resampled row.
    var heldFloatPixels: Int { result.pixels.count + widened.count + resampled.count }

    /// Adds `count` RGB rows (of `columns`) starting at `rows`, `rowStride` bytes apart.
    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride: Int) {
        for index in 0..<count where rowsConsumed < sourceHeight {
            add(rows + index * rowStride, row: rowsConsumed)
            rowsConsumed += 1
        }
    }

    private func add(_ source: UnsafePointer<UInt8>, row: Int) {
        let first = vertical.first, count = vertical.count
        while firstOpenRow < outputHeight && Int(first[firstOpenRow] + count[firstOpenRow]) <= row { firstOpenRow += 1 }
        guard firstOpenRow < outputHeight && Int(first[firstOpenRow]) <= row else { return } // a row no tap reads
        // Only the columns some tap reads are widened: a row handed over whole (the frame of a
        // placeholder or an attention crop) costs what a cropped one does.
        let firstColumn = max(columns.lowerBound, columnsRead.lowerBound)
        let endColumn = min(columns.upperBound, columnsRead.upperBound)
        let read = source + (firstColumn - columns.lowerBound) * 3
        widened.withUnsafeMutableBufferPointer { widened in
            for x in 0..<max(0, endColumn - firstColumn) {
                widened[x] = SIMD4(Float(read[x * 3]), Float(read[x * 3 + 1]), Float(read[x * 3 + 2]), 255)
            }
            resampled.withUnsafeMutableBufferPointer { resampled in
                Lanczos3.horizontalRow(UnsafePointer(widened.baseAddress!), firstColumn: firstColumn, taps: horizontal,
                                       into: resampled.baseAddress!)
                let input = UnsafePointer(resampled.baseAddress!)
                let width = outputWidth
                result.pixels.withUnsafeMutableBufferPointer { destination in
                    vertical.weights.withUnsafeBufferPointer { weights in
                        var y = firstOpenRow
                        while y < outputHeight && Int(first[y]) <= row {
                            let tap = row - Int(first[y])
                            if tap < Int(count[y]) {
                                let output = destination.baseAddress! + y * width
                                let w = weights[y * vertical.maxTaps + tap]
                                for x in 0..<width { output[x] += input[x] * w }
                            }
                            y += 1
                        }
                    }
                }
            }
        }
    }

    /// The output, once every row is in.
    func finish() -> FloatImage { result }
}
