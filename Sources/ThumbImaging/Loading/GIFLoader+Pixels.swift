import CGIF

extension GIFLoader {
    /// Rows decoded between two questions to the cancellation check: at most 32 × 65,535
    /// pixels, a few milliseconds of LZW.
    static let rowsPerCancellationCheck = 32

    /// The first frame's rows drawn onto the transparent canvas through the palette. RGB when
    /// the frame covers the canvas and no pixel is transparent, else RGBA. A frame whose data
    /// ends early keeps the rows decoded before, the rest transparent, with a warning (browsers
    /// show the partial frame); one without a single row fails.
    func decodeFirstFrame(isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        let covers = frame.covers(width: storedWidth, height: storedHeight)
        let channels = covers && frame.transparentIndex == nil ? 3 : 4
        var indices = [UInt8](repeating: 0, count: frame.width)
        // Allocated at the first decoded row: data that fails at once costs no canvas.
        var canvas: [UInt8] = []
        var rowsDecoded = 0
        var sawTransparent = false
        while rowsDecoded < frame.height {
            if rowsDecoded % Self.rowsPerCancellationCheck == 0, isCancelled?() == true { throw .cancelled }
            let decoded = indices.withUnsafeMutableBufferPointer { readRow(into: $0.baseAddress!) }
            guard decoded else { break }
            if canvas.isEmpty { canvas = [UInt8](repeating: 0, count: storedWidth * storedHeight * channels) }
            let y = frame.top + (frame.interlaced ? Self.interlacedRow(rowsDecoded, height: frame.height) : rowsDecoded)
            draw(indices, y: y, channels: channels, into: &canvas)
            if let transparent = frame.transparentIndex, !sawTransparent {
                sawTransparent = indices.contains(UInt8(transparent))
            }
            rowsDecoded += 1
        }
        guard rowsDecoded > 0 else {
            throw .undecodable(reason: failureReason("first frame (\(frame.width)x\(frame.height), no row decoded)"))
        }
        var pixels = PixelBuffer(width: storedWidth, height: storedHeight, channels: channels, bytes: canvas)
        guard rowsDecoded == frame.height else {
            let warning = failureReason("first frame truncated: \(rowsDecoded) of \(frame.height) rows decoded, the rest transparent")
            return LoadedFrame(pixels: clearingRows(from: rowsDecoded, of: pixels), iccProfile: nil, warning: warning)
        }
        if channels == 4 && covers && !sawTransparent {
            pixels = pixels.flattened() // every alpha is 255: exactly the RGB
        }
        return LoadedFrame(pixels: pixels, iccProfile: nil, warning: nil)
    }

    /// One row of colour indices through the palette at canvas row `y`, from the frame's left.
    private func draw(_ indices: [UInt8], y: Int, channels: Int, into canvas: inout [UInt8]) {
        let start = (y * storedWidth + frame.left) * channels
        canvas.withUnsafeMutableBufferPointer { canvas in
            palette.withUnsafeBufferPointer { palette in
                indices.withUnsafeBufferPointer { indices in
                    var out = canvas.baseAddress! + start
                    for index in indices {
                        let entry = palette.baseAddress! + Int(index) * 4
                        out[0] = entry[0]
                        out[1] = entry[1]
                        out[2] = entry[2]
                        if channels == 4 { out[3] = entry[3] }
                        out += channels
                    }
                }
            }
        }
    }

    /// `pixels` as RGBA with the frame rows from file row `first` on (never decoded) transparent.
    private func clearingRows(from first: Int, of pixels: PixelBuffer) -> PixelBuffer {
        var rgba = pixels.withAlpha()
        let rowBytes = frame.width * 4
        rgba.bytes.withUnsafeMutableBufferPointer { bytes in
            for fileRow in first..<frame.height {
                let y = frame.top + (frame.interlaced ? Self.interlacedRow(fileRow, height: frame.height) : fileRow)
                let start = (y * storedWidth + frame.left) * 4
                UnsafeMutableRawPointer(bytes.baseAddress! + start).initializeMemory(as: UInt8.self, repeating: 0, count: rowBytes)
            }
        }
        return rgba
    }

    /// The frame row that file row `fileRow` of an interlaced image holds: four passes, of every
    /// 8th row from 0, every 8th from 4, every 4th from 2, every 2nd from 1 (GIF89a appendix E).
    static func interlacedRow(_ fileRow: Int, height: Int) -> Int {
        var row = fileRow
        for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
            let count = height > start ? (height - start + step - 1) / step : 0
            if row < count { return start + row * step }
            row -= count
        }
        return fileRow // past the last pass: not a row of the image
    }

    /// 256 RGBA entries for `map` (nil: no local or global map).
    static func palette(_ map: UnsafeMutablePointer<ColorMapObject>?, transparentIndex: Int?) -> [UInt8] {
        var entries = [UInt8](repeating: 0, count: 256 * 4)
        let colors = map?.pointee.Colors
        let count = map.map { min(max(Int($0.pointee.ColorCount), 0), 256) } ?? 0
        for index in 0..<256 {
            if let colors, index < count {
                (entries[index * 4], entries[index * 4 + 1], entries[index * 4 + 2]) =
                    (colors[index].Red, colors[index].Green, colors[index].Blue)
            } else if colors == nil {
                // No colour map at all: GIF87a leaves the table to the viewer; Pillow reads
                // the indices as grey levels (Wuffs, and so Chromium, would show black).
                (entries[index * 4], entries[index * 4 + 1], entries[index * 4 + 2]) = (UInt8(index), UInt8(index), UInt8(index))
            }
            entries[index * 4 + 3] = 255
        }
        if let transparentIndex {
            for channel in 0..<4 { entries[transparentIndex * 4 + channel] = 0 }
        }
        return entries
    }
}
