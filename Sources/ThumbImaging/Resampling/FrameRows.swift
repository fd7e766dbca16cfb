/// A decoded frame's 8-bit RGB rows, kept as they come, for outputs whose Lanczos region is
/// only known once the whole frame is seen (attention crops that need no block shrink).
/// Bytes stay bytes (3 a pixel, not the 16 of a float pixel): without a block shrink the frame
/// is under 4 times the crop along its shorter side, a few times the output's own floats
/// (9 MB for a 384-px grid cell of a 12-MP photo, decoded at 1/2); the decoder refuses to keep
/// one over `maxDecoderMemoryBytes` (the crop is then centred). The Lanczos step then reads just
/// the chosen region's columns (`RowResampler`), as a centred crop's does; resampling the whole
/// frame's width to find the crop afterwards cost a quarter more.
final class FrameRows {
    let width: Int
    let height: Int
    static let channels = 3
    private(set) var bytes: [UInt8]
    private(set) var rowsConsumed = 0

    init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        // Not zeroed: every row is written before the frame is read (`isComplete` is checked first).
        let count = self.width * self.height * Self.channels
        bytes = [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    var isComplete: Bool { rowsConsumed >= height }

    var rowStride: Int { width * Self.channels }

    /// Lets `body` write up to `maxRows` rows straight into the frame (at `rowStride`); it returns
    /// how many it wrote. Spares the copy when the decoder's rows are all the frame needs.
    func appendRows(maxRows: Int, _ body: (UnsafeMutablePointer<UInt8>, Int) throws(ImagingError) -> Int) throws(ImagingError) -> Int {
        let room = min(maxRows, height - rowsConsumed)
        guard room > 0 else { return 0 }
        let start = rowsConsumed * rowStride
        let written = try bytes.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
            try body(buffer.baseAddress! + start, room)
        }
        rowsConsumed += max(0, min(written, room))
        return written
    }

    /// `body` reads `rows` (already written) of the frame, `rowStride` bytes apart.
    func withRows(_ rows: Range<Int>, _ body: (UnsafePointer<UInt8>) -> Void) {
        guard !rows.isEmpty, rows.lowerBound >= 0, rows.upperBound <= rowsConsumed else { return }
        bytes.withUnsafeBufferPointer { frame in body(frame.baseAddress! + rows.lowerBound * rowStride) }
    }

    /// Adds `count` RGB rows of the frame's full width starting at `rows`, `rowStride` bytes apart.
    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride sourceStride: Int) {
        let stride = rowStride
        bytes.withUnsafeMutableBufferPointer { destination in
            for index in 0..<count where rowsConsumed < height {
                (destination.baseAddress! + rowsConsumed * stride).update(from: rows + index * sourceStride, count: stride)
                rowsConsumed += 1
            }
        }
    }

    /// Streams the frame through `resampler` (built for this frame's size), which widens only
    /// the columns its taps read.
    func resample(_ resampler: RowResampler) -> FloatImage {
        guard !bytes.isEmpty else { return resampler.finish() }
        bytes.withUnsafeBufferPointer { frame in
            resampler.consume(rows: frame.baseAddress!, count: height, rowStride: rowStride)
        }
        return resampler.finish()
    }
}
