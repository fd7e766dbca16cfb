import CThumbShim

/// A JPEG decoded whole at one DCT scale, rows only, with what the decode read: what the scan
/// selection of progressive files is checked against (the tests, the `jpeg-dc-scans` fuzz target).
package struct JPEGScaledPixels: Equatable, Sendable {
    package var width: Int
    package var height: Int
    /// Bytes a pixel: 3 (RGB) or 4 (CMYK).
    package var components: Int
    package var pixels: [UInt8]
    package var warningCount: Int
    /// Bytes of the file libjpeg never read: the skipped scans (0: the file was decoded whole).
    package var skippedScanBytes: Int
    /// Scans libjpeg entropy-decoded.
    package var scansRead: Int

    /// Decodes `source` at 1/`scaleDenominator`; `selectsScans` false decodes every scan, as
    /// thumbd did before scan selection.
    package static func decode(_ source: SourceBytes, scaleDenominator: Int, selectsScans: Bool,
                               limits: ImageLimits) throws(ImagingError) -> JPEGScaledPixels {
        let decoder = try JPEGDecoder(source: source, limits: limits, selectsScans: selectsScans)
        try limits.check(width: decoder.storedWidth, height: decoder.storedHeight)
        let scaled = try decoder.start(scaleDenominator: scaleDenominator)
        let rowBytes = scaled.width * scaled.components
        var pixels = [UInt8](repeating: 0, count: rowBytes * scaled.height)
        var rowsRead = 0
        while rowsRead < scaled.height {
            let count = try pixels.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                try decoder.readRows(into: buffer.baseAddress! + rowsRead * rowBytes, rowStride: rowBytes,
                                     maxRows: scaled.height - rowsRead)
            }
            if count == 0 { break }
            rowsRead += count
        }
        guard rowsRead == scaled.height else { throw .undecodable(reason: "decoder stopped before the last row") }
        return JPEGScaledPixels(width: scaled.width, height: scaled.height, components: scaled.components, pixels: pixels,
                                warningCount: decoder.warningCount, skippedScanBytes: decoder.skippedScanBytes,
                                scansRead: decoder.scansRead)
    }
}

/// The scan selection itself (`CThumb_JPEGKeepScans`), on any bytes.
package enum JPEGScanSelection {
    package struct Kept: Equatable, Sendable {
        package var stream: [UInt8]
        package var scans: Int
        package var keptScans: Int
        package var skippedBytes: Int
        /// Where the first scan's entropy-coded data starts, in both streams.
        package var headerBytes: Int
    }

    /// The stream without the AC scans of the components whose bit is clear in `acComponents`
    /// (bit i: the frame's i-th component), or nil when it is to be decoded whole.
    package static func keep(_ bytes: [UInt8], acComponents: UInt32, maxScans: Int) -> Kept? {
        var output: UnsafeMutablePointer<UInt8>?
        var selection = CThumb_JPEGScanSelection()
        let kept = bytes.withUnsafeBufferPointer { buffer in
            CThumb_JPEGKeepScans(buffer.baseAddress, buffer.count, acComponents, Int32(clamping: maxScans), &output, &selection)
        }
        guard kept == 1, let output else { return nil }
        defer { CThumb_Free(output) }
        return Kept(stream: Array(UnsafeBufferPointer(start: output, count: selection.keptBytes)), scans: Int(selection.scans),
                    keptScans: Int(selection.keptScans), skippedBytes: selection.skippedBytes, headerBytes: selection.headerBytes)
    }
}
