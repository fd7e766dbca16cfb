import CThumbShim

/// One JPEG decode, in libjpeg's phases: header (cheap, checked against limits), then a start
/// at a chosen DCT scale, then rows in batches. `isCancelled` is asked from inside libjpeg too
/// (its progress monitor), so a progressive file, whose scans are all consumed by `start`,
/// stops within a few MCU rows instead of after the whole entropy decode.
final class JPEGDecoder {
    private let handle: OpaquePointer
    private let source: SourceBytes // kept alive: libjpeg reads from its memory
    private let cancellation: CancellationContext? // kept alive: the shim holds it unretained
    let header: CThumb_JPEGHeader
    let orientation: Orientation

    /// `selectsScans`: at 1/8, decode a progressive file from the scans its pixels show (see
    /// `CThumb_JPEGKeepScans`); false decodes every scan (the tests' reference).
    init(source: SourceBytes, limits: ImageLimits, isCancelled: CancellationCheck? = nil,
         selectsScans: Bool = true) throws(ImagingError) {
        guard let handle = CThumb_JPEGDecoderCreate(source.pointer, source.count, Int32(clamping: limits.maxProgressiveScans),
                                                    limits.maxDecoderMemoryBytes) else {
            throw .undecodable(reason: "cannot create a JPEG decoder (out of memory)")
        }
        self.handle = handle
        self.source = source
        cancellation = isCancelled.map(CancellationContext.init)
        if let cancellation { CThumb_JPEGDecoderSetCancelCheck(handle, CancellationContext.ask, cancellation.pointer) }
        if !selectsScans { CThumb_JPEGDecoderSetScanSelection(handle, 0) }
        var header = CThumb_JPEGHeader()
        guard CThumb_JPEGReadHeader(handle, &header) == 0 else {
            let message = String(cString: CThumb_JPEGErrorMessage(handle))
            let outOfMemory = CThumb_JPEGErrorIsOutOfMemory(handle) != 0
            CThumb_JPEGDecoderDestroy(handle)
            throw outOfMemory ? .tooLarge(reason: OutOfMemory.reason("libjpeg", message)) : .undecodable(reason: message)
        }
        self.header = header
        if let exif = header.exif, header.exifLength > 0 {
            orientation = EXIFReader.orientation(tiff: UnsafeRawBufferPointer(start: exif, count: header.exifLength)) ?? .up
        } else {
            orientation = .up
        }
    }

    deinit { CThumb_JPEGDecoderDestroy(handle) }

    var storedWidth: Int { Int(header.width) }
    var storedHeight: Int { Int(header.height) }
    var isCMYK: Bool { header.colorSpace == CThumb_JPEGColorCMYK || header.colorSpace == CThumb_JPEGColorYCCK }

    /// The embedded ICC profile, if any (a broken one counts as none).
    func iccProfile() -> [UInt8]? {
        var pointer: UnsafeMutablePointer<UInt8>?
        var length: UInt32 = 0
        guard CThumb_JPEGCopyICCProfile(handle, &pointer, &length) == 1, let pointer else { return nil }
        defer { CThumb_Free(pointer) }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
    }

    /// Starts decompression at 1/`scaleDenominator`; returns the scaled size in pixels and the
    /// bytes per pixel (3 for RGB, 4 for CMYK).
    func start(scaleDenominator: Int) throws(ImagingError) -> (width: Int, height: Int, components: Int) {
        var width: UInt32 = 0, height: UInt32 = 0, components: Int32 = 0
        let status = CThumb_JPEGStart(handle, Int32(scaleDenominator), &width, &height, &components)
        guard status == 0 else { throw failure(status) }
        return (Int(width), Int(height), Int(components))
    }

    /// After `start`, before any row: decode only `columns` of the scaled output, widened by
    /// libjpeg to whole iMCU columns; returns the columns the rows will then hold.
    func cropColumns(_ columns: Range<Int>) throws(ImagingError) -> Range<Int> {
        var first = UInt32(clamping: columns.lowerBound), width = UInt32(clamping: columns.count)
        let status = CThumb_JPEGCropColumns(handle, &first, &width)
        guard status == 0 else { throw failure(status) }
        return Int(first)..<Int(first) + Int(width)
    }

    /// Reads up to `maxRows` rows; returns how many were read (0 at the end).
    func readRows(into rows: UnsafeMutablePointer<UInt8>, rowStride: Int, maxRows: Int) throws(ImagingError) -> Int {
        let count = CThumb_JPEGReadRows(handle, rows, rowStride, Int32(maxRows))
        guard count >= 0 else { throw failure(count) }
        return Int(count)
    }

    /// After `start`: bytes of the file libjpeg was not given (the skipped AC scans; 0: decoded whole).
    var skippedScanBytes: Int { CThumb_JPEGSkippedScanBytes(handle) }

    /// After `start`: the scans libjpeg read.
    var scansRead: Int { Int(CThumb_JPEGScansRead(handle)) }

    var warningCount: Int { Int(CThumb_JPEGWarningCount(handle)) }

    /// Corrupt-data warnings: the count and the first message.
    var warning: String? {
        let count = CThumb_JPEGWarningCount(handle)
        guard count > 0 else { return nil }
        return "\(count) warning(s), first: \(String(cString: CThumb_JPEGFirstWarning(handle)))"
    }

    private func failure(_ status: Int32) -> ImagingError {
        if status == CTHUMB_CANCELLED { return .cancelled }
        let message = String(cString: CThumb_JPEGErrorMessage(handle))
        if CThumb_JPEGErrorIsOutOfMemory(handle) != 0 { return .tooLarge(reason: OutOfMemory.reason("libjpeg", message)) }
        return message.hasPrefix("too many progressive scans") ? .tooLarge(reason: message) : .undecodable(reason: message)
    }
}
