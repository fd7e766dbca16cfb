import CThumbShim

/// One PNG decode: info (checked against limits before any pixel buffer exists), then rows,
/// streamed for non-interlaced images, or for Adam7 ones combined pass by pass into a whole frame.
final class PNGDecoder {
    private let handle: OpaquePointer
    private let source: SourceBytes // kept alive: libpng reads from its memory
    let info: CThumb_PNGInfo

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        // libpng reports its own dimension limit as a generic "Invalid IHDR data": check the
        // header's size ourselves first, so that an oversized image says which limit it broke.
        if let size = Self.headerSize(source) { try limits.check(width: size.width, height: size.height) }
        let side = UInt32(clamping: limits.maxDimension)
        guard let handle = CThumb_PNGDecoderCreate(source.pointer, source.count, side, side, 8 << 20) else {
            throw .undecodable(reason: "cannot create a PNG decoder (out of memory)")
        }
        self.handle = handle
        self.source = source
        var info = CThumb_PNGInfo()
        guard CThumb_PNGReadInfo(handle, &info) == 0 else {
            let message = String(cString: CThumb_PNGErrorMessage(handle))
            CThumb_PNGDecoderDestroy(handle)
            // libpng's own dimension limit speaks of "user limits": say which limit it was.
            if message.contains("exceeds user limit") {
                throw .tooLarge(reason: "\(message) (\(limits.maxDimension) pixels a side)")
            }
            throw .undecodable(reason: message)
        }
        self.info = info
    }

    deinit { CThumb_PNGDecoderDestroy(handle) }

    /// Width and height from the IHDR chunk, which must come first (bytes 8–23 of the file).
    static func headerSize(_ source: SourceBytes) -> (width: Int, height: Int)? {
        guard source.count >= 24 else { return nil }
        let bytes = source.pointer
        guard bytes[12] == 0x49, bytes[13] == 0x48, bytes[14] == 0x44, bytes[15] == 0x52 else { return nil }
        func bigEndian(_ offset: Int) -> Int {
            (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
        }
        let width = bigEndian(16), height = bigEndian(20)
        // Zero or over 2³¹: libpng refuses these as invalid with a better message.
        guard width > 0, height > 0, width <= Int(Int32.max), height <= Int(Int32.max) else { return nil }
        return (width, height)
    }

    var width: Int { Int(info.width) }
    var height: Int { Int(info.height) }

    var iccProfile: [UInt8]? {
        guard let profile = info.iccProfile, info.iccProfileLength > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: profile, count: Int(info.iccProfileLength)))
    }

    /// Sets up 8-bit RGB(A) output (with `keep16`, native 16-bit samples for a 16-bit image);
    /// returns channels (3 or 4) and the interlace passes (1 or 7).
    func start(applyGamma: Bool, keep16: Bool = false) throws(ImagingError) -> (channels: Int, passes: Int) {
        var channels: Int32 = 0, passes: Int32 = 0
        guard CThumb_PNGStart(handle, applyGamma ? 1 : 0, keep16 ? 1 : 0, &channels, &passes) == 0 else { throw failure() }
        return (Int(channels), Int(passes))
    }

    func readRows(into rows: UnsafeMutablePointer<UInt8>, rowStride: Int, count: Int) throws(ImagingError) {
        guard CThumb_PNGReadRows(handle, rows, rowStride, Int32(count)) == Int32(count) else { throw failure() }
    }

    /// Interlaced images: the next `count` of the passes × height row reads, into the whole frame.
    func readInterlacedRows(into pixels: UnsafeMutablePointer<UInt8>, rowStride: Int, count: Int) throws(ImagingError) {
        guard CThumb_PNGReadInterlacedRows(handle, pixels, rowStride, Int32(count)) == Int32(count) else { throw failure() }
    }

    var warning: String? {
        let count = CThumb_PNGWarningCount(handle)
        guard count > 0 else { return nil }
        return "\(count) warning(s), first: \(String(cString: CThumb_PNGFirstWarning(handle)))"
    }

    private func failure() -> ImagingError {
        .undecodable(reason: String(cString: CThumb_PNGErrorMessage(handle)))
    }
}
