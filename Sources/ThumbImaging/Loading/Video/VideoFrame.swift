import CFFmpeg
import CThumbVideo

/// A decoded frame kept past the decoder's next call (a reference of its own), with what the
/// render needs to know of it: its picture size with square pixels, its colour and its looks.
final class VideoFrame {
    let frame: UnsafeMutablePointer<AVFrame>
    /// The picture as shown before the display matrix: the coded size with the sample aspect
    /// ratio applied to the width (a DV or anamorphic clip's pixels are not square).
    let width: Int
    let height: Int
    /// Seconds from the clip's start, when the frame says.
    let seconds: Double?

    init(referencing decoded: UnsafeMutablePointer<AVFrame>, file: VideoFile) throws(ImagingError) {
        guard let copy = ff.av_frame_alloc!() else { throw .tooLarge(reason: "out of memory keeping a video frame") }
        guard ff.av_frame_ref!(copy, decoded) >= 0 else {
            var copy: UnsafeMutablePointer<AVFrame>? = copy
            ff.av_frame_free!(&copy)
            throw .tooLarge(reason: "out of memory keeping a video frame")
        }
        frame = copy
        let coded = (width: Int(decoded.pointee.width), height: Int(decoded.pointee.height))
        var shownWidth = coded.width
        if let ratio = file.sampleAspectRatio(of: decoded) {
            let (product, overflow) = coded.width.multipliedReportingOverflow(by: ratio.num)
            if !overflow { shownWidth = max(1, (product + ratio.den / 2) / ratio.den) }
        }
        width = shownWidth
        height = coded.height
        seconds = file.seconds(decoded.pointee.best_effort_timestamp)
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        ff.av_frame_free!(&frame)
    }

    /// A frame the decoder marked as concealed (missing references: the grey or smeared
    /// pictures before a clip's first keyframe).
    static func isDamaged(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        frame.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 || frame.pointee.decode_error_flags != 0
    }

    /// Luma statistics of a grid of samples (`LumaStatistics`); nil for a frame without a luma
    /// plane (RGB, palette), which is taken as it is.
    static func statistics(_ frame: UnsafeMutablePointer<AVFrame>) -> LumaStatistics? {
        guard let descriptor = ff.av_pix_fmt_desc_get!(AVPixelFormat(frame.pointee.format)),
              descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL) == 0,
              let plane = frame.pointee.data.0 else { return nil }
        let luma = descriptor.pointee.comp.0
        let bits = Int(luma.depth)
        guard luma.plane == 0, luma.step == 1 || luma.step == 2, bits >= 1, bits <= 16 else { return nil }
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height), stride = Int(frame.pointee.linesize.0)
        guard width > 0, height > 0, stride > 0 else { return nil }
        let grid = 64
        let step = Int(luma.step), offset = Int(luma.offset), shift = Int(luma.shift)
        var samples: [Int] = []
        samples.reserveCapacity(grid * grid)
        for row in 0..<grid {
            let y = (row * 2 + 1) * height / (grid * 2)
            for column in 0..<grid {
                let x = (column * 2 + 1) * width / (grid * 2)
                let at = y * stride + x * step + offset
                let code = step == 2 ? Int(UnsafeRawPointer(plane + at).loadUnaligned(as: UInt16.self)) : Int(plane[at])
                samples.append(code >> shift)
            }
        }
        return LumaStatistics(samples: samples, bits: bits, limitedRange: !isFullRange(frame))
    }

    static func isFullRange(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        if frame.pointee.color_range == AVCOL_RANGE_JPEG { return true }
        switch AVPixelFormat(frame.pointee.format) {
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUVJ411P: return true
        default: return false
        }
    }

    /// The HDR signal of the frame (PQ or HLG by its transfer, or the stream's when the frame
    /// leaves it unsaid), with the content's peak from its light-level or mastering metadata.
    func hdrSignal(stream: UnsafeMutablePointer<AVStream>) -> HDRSignal? {
        var transfer = frame.pointee.color_trc
        if transfer == AVCOL_TRC_UNSPECIFIED { transfer = stream.parameters.color_trc }
        guard let hdr = HDRTransfer(h273: Int(transfer.rawValue)) else { return nil }
        var primariesCode = frame.pointee.color_primaries
        if primariesCode == AVCOL_PRI_UNSPECIFIED { primariesCode = stream.parameters.color_primaries }
        let primaries = primariesCode == AVCOL_PRI_UNSPECIFIED ? Chromaticities.bt2020 : (Chromaticities.h273(Int(primariesCode.rawValue)) ?? .bt2020)
        return HDRSignal(transfer: hdr, primaries: primaries, contentPeakNits: contentPeakNits(stream: stream))
    }

    private func contentPeakNits(stream: UnsafeMutablePointer<AVStream>) -> Double? {
        if let data = ff.av_frame_get_side_data!(frame, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL), data.pointee.size >= MemoryLayout<AVContentLightMetadata>.size {
            let level = UnsafeRawPointer(data.pointee.data).loadUnaligned(as: AVContentLightMetadata.self)
            if level.MaxCLL > 0 { return Double(level.MaxCLL) }
        }
        var size = 0
        if let data = ff.av_stream_get_side_data!(stream, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size), size >= MemoryLayout<AVContentLightMetadata>.size {
            let level = UnsafeRawPointer(data).loadUnaligned(as: AVContentLightMetadata.self)
            if level.MaxCLL > 0 { return Double(level.MaxCLL) }
        }
        var mastering: AVMasteringDisplayMetadata?
        if let data = ff.av_frame_get_side_data!(frame, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA),
           data.pointee.size >= MemoryLayout<AVMasteringDisplayMetadata>.size {
            mastering = UnsafeRawPointer(data.pointee.data).loadUnaligned(as: AVMasteringDisplayMetadata.self)
        } else if let data = ff.av_stream_get_side_data!(stream, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size),
                  size >= MemoryLayout<AVMasteringDisplayMetadata>.size {
            mastering = UnsafeRawPointer(data).loadUnaligned(as: AVMasteringDisplayMetadata.self)
        }
        if let mastering, mastering.has_luminance != 0, mastering.max_luminance.den > 0, mastering.max_luminance.num > 0 {
            return Double(mastering.max_luminance.num) / Double(mastering.max_luminance.den)
        }
        return nil
    }

    /// The frame as 8-bit sRGB, reduced by at most `maxShrink` along each axis (swscale's area
    /// filter, the YCbCr matrix and range the frame names; an HDR frame through the tone
    /// mapper, averaged in linear light), and the ICC profile of an SDR frame whose primaries
    /// are not sRGB's.
    /// `size`: exactly this many pixels instead (a preview's later frames are its first's size,
    /// whatever size the stream changes to).
    func pixels(maxShrink: Double, stream: UnsafeMutablePointer<AVStream>, isCancelled: CancellationCheck?,
                size: (width: Int, height: Int)? = nil) throws(ImagingError) -> LoadedFrame {
        let shrink = maxShrink.isFinite ? max(1, maxShrink) : 1
        if let signal = hdrSignal(stream: stream) {
            // Half the reduction in swscale (in the signal's domain), the rest averaged in linear light.
            let reduction = shrink >= 4 && size == nil ? 2 : 1
            let (width, height) = size ?? Self.reduced(width, height, by: shrink / Double(reduction))
            let samples = try scale(to: width, height, format: AV_PIX_FMT_RGB48LE, bytesPerPixel: 6)
            let mapper = HDRToneMapper(signal, maximumCode: 65_535)
            let pixels = samples.withUnsafeBytes { bytes in
                mapper.toneMap(width: width, height: height, hasAlpha: false, alphaMaximum: 65_535, reduction: reduction,
                               isCancelled: isCancelled) { y, codes in
                    let row = bytes.baseAddress! + y * width * 6
                    for x in 0..<width {
                        let at = row + x * 6
                        codes[x] = SIMD4(Int32(at.loadUnaligned(as: UInt16.self)), Int32(at.loadUnaligned(fromByteOffset: 2, as: UInt16.self)),
                                         Int32(at.loadUnaligned(fromByteOffset: 4, as: UInt16.self)), 65_535)
                    }
                }
            }
            guard let pixels else { throw .cancelled }
            // The tone mapper's last block of a row may be partial: say how far each pixel reaches.
            let reach = reduction == 1 ? nil
                : (x: Double(self.width) / Double(width) * Double(reduction), y: Double(self.height) / Double(height) * Double(reduction))
            return LoadedFrame(pixels: pixels, iccProfile: nil, warning: nil, storedPixelsPerPixel: reach)
        }
        let (width, height) = size ?? Self.reduced(width, height, by: shrink)
        let bytes = try scale(to: width, height, format: AV_PIX_FMT_RGB24, bytesPerPixel: 3)
        return LoadedFrame(pixels: PixelBuffer(width: width, height: height, channels: 3, bytes: bytes), iccProfile: iccProfile(), warning: nil)
    }

    static func reduced(_ width: Int, _ height: Int, by shrink: Double) -> (Int, Int) {
        (max(1, Int((Double(width) / shrink).rounded(.up))), max(1, Int((Double(height) / shrink).rounded(.up))))
    }

    /// swscale of the whole frame to `width` × `height` packed pixels of `format`.
    private func scale(to width: Int, _ height: Int, format: AVPixelFormat, bytesPerPixel: Int) throws(ImagingError) -> [UInt8] {
        let source = frame.pointee
        let downscale = width < Int(source.width) || height < Int(source.height)
        guard let scaler = ff.sws_getContext!(source.width, source.height, AVPixelFormat(source.format), Int32(width), Int32(height), format,
                                          (downscale ? SWS_AREA : SWS_BICUBIC) | SWS_ACCURATE_RND, nil, nil, nil) else {
            throw .undecodable(reason: "swscale cannot convert \(Self.pixelFormatName(source.format)) frames")
        }
        defer { ff.sws_freeContext!(scaler) }
        _ = ff.sws_setColorspaceDetails!(scaler, ff.sws_getCoefficients!(Self.matrix(frame)), Self.isFullRange(frame) ? 1 : 0,
                                     ff.sws_getCoefficients!(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16)
        var bytes = [UInt8](repeating: 0, count: width * height * bytesPerPixel)
        let rows = bytes.withUnsafeMutableBytes { buffer in
            CThumb_VideoScaleFrame(scaler, frame, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(width * bytesPerPixel))
        }
        guard rows == Int32(height) else {
            throw .undecodable(reason: "swscale converted \(rows) of \(height) rows of a \(Self.pixelFormatName(source.format)) frame")
        }
        return bytes
    }

    /// swscale's YCbCr matrix for the frame: the one it names, else BT.709 for HD and BT.601
    /// below (what players assume of an untagged clip).
    static func matrix(_ frame: UnsafeMutablePointer<AVFrame>) -> Int32 {
        switch frame.pointee.colorspace {
        case AVCOL_SPC_BT709: SWS_CS_ITU709
        case AVCOL_SPC_BT470BG, AVCOL_SPC_SMPTE170M: SWS_CS_ITU601
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: SWS_CS_BT2020
        case AVCOL_SPC_FCC: SWS_CS_FCC
        case AVCOL_SPC_SMPTE240M: SWS_CS_SMPTE240M
        default: frame.pointee.height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601
        }
    }

    /// BT.2020 or Display P3 primaries under an SDR transfer, as an ICC profile (the HEIF
    /// loader's nclx reading); nil for BT.709/BT.601 and unspecified (taken as sRGB).
    private func iccProfile() -> [UInt8]? {
        let primaries = Int(frame.pointee.color_primaries.rawValue)
        guard primaries == 9 || primaries == 12 else { return nil }
        return HEIFLoader.nclxProfile(primaries: primaries, transfer: Int(frame.pointee.color_trc.rawValue), chromaticities: Chromaticities.h273(primaries) ?? .sRGB).profile
    }

    static func pixelFormatName(_ format: Int32) -> String {
        ff.av_get_pix_fmt_name!(AVPixelFormat(format)).map { String(cString: $0) } ?? "unknown"
    }
}
