import CThumbShim

/// One PNG decode: info (checked against limits before any pixel buffer exists), then rows,
/// streamed for non-interlaced images or read whole for Adam7 ones.
final class PNGDecoder {
    private let handle: OpaquePointer
    private let source: SourceBytes // kept alive: libpng reads from its memory
    let info: CThumb_PNGInfo

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
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

    var width: Int { Int(info.width) }
    var height: Int { Int(info.height) }

    var iccProfile: [UInt8]? {
        guard let profile = info.iccProfile, info.iccProfileLength > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: profile, count: Int(info.iccProfileLength)))
    }

    /// Sets up 8-bit RGB(A) output; returns channels (3 or 4) and whether the image is interlaced.
    func start(applyGamma: Bool) throws(ImagingError) -> (channels: Int, interlaced: Bool) {
        var channels: Int32 = 0, passes: Int32 = 0
        guard CThumb_PNGStart(handle, applyGamma ? 1 : 0, &channels, &passes) == 0 else { throw failure() }
        return (Int(channels), passes > 1)
    }

    func readRows(into rows: UnsafeMutablePointer<UInt8>, rowStride: Int, count: Int) throws(ImagingError) {
        guard CThumb_PNGReadRows(handle, rows, rowStride, Int32(count)) == Int32(count) else { throw failure() }
    }

    func readImage(into pixels: UnsafeMutablePointer<UInt8>, rowStride: Int) throws(ImagingError) {
        guard CThumb_PNGReadImage(handle, pixels, rowStride) == 0 else { throw failure() }
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
