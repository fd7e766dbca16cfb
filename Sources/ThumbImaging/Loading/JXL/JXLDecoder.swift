import CJXL

/// One libjxl decoder over the whole file (input closed at once: the bytes are all in memory),
/// subscribed to the header events and the first full image.
final class JXLDecoder {
    let handle: OpaquePointer
    let source: SourceBytes
    /// Whether a `JXL_DEC_FRAME` event came: a later error is in the frame's data, not the header.
    private(set) var sawFrame = false
    /// Whether the decoder stands just after the colour encoding (ready for the frame).
    private var atFrameStart = false

    struct Header {
        var info: JxlBasicInfo
        /// The image's own colour encoding (nil when it is an ICC profile only).
        var originalEncoding: JxlColorEncoding?
    }

    init(_ source: SourceBytes) throws(ImagingError) {
        // nil: libjxl's default allocator, no parallel runner (none is set below).
        guard let handle = JxlDecoderCreate(nil) else {
            throw .tooLarge(reason: OutOfMemory.reason("libjxl", "it could not create a decoder"))
        }
        self.handle = handle
        self.source = source
    }

    deinit { JxlDecoderDestroy(handle) }

    /// Starts over (a second `load` decodes again) and configures: the whole input, alpha made
    /// straight by libjxl (it un-premultiplies in float, before rounding), frames coalesced and
    /// oriented (the defaults, set again here so a change of default cannot turn a picture).
    private func start() throws(ImagingError) {
        JxlDecoderReset(handle)
        sawFrame = false
        let events = Int32(JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue
                           | JXL_DEC_FULL_IMAGE.rawValue)
        guard JxlDecoderSubscribeEvents(handle, events) == JXL_DEC_SUCCESS,
              JxlDecoderSetKeepOrientation(handle, 0) == JXL_DEC_SUCCESS,
              JxlDecoderSetCoalescing(handle, 1) == JXL_DEC_SUCCESS,
              JxlDecoderSetUnpremultiplyAlpha(handle, 1) == JXL_DEC_SUCCESS,
              JxlDecoderSetInput(handle, source.pointer, source.count) == JXL_DEC_SUCCESS else {
            throw .undecodable(reason: "JPEG XL: libjxl refused the decoder's settings")
        }
        JxlDecoderCloseInput(handle)
    }

    /// Runs to the colour encoding: the basic info, then the colour profile. An XYB (lossy) image
    /// that is not HDR is asked for in sRGB (libjxl converts from XYB in float; without the
    /// preference, one with an ICC profile comes out in linear sRGB, banded at 8 bits); an HDR
    /// one keeps its own encoding, for the tone mapper.
    func readHeader() throws(ImagingError) -> Header {
        try start()
        var info: JxlBasicInfo?
        while true {
            let status = JxlDecoderProcessInput(handle)
            switch status {
            case JXL_DEC_BASIC_INFO:
                var basic = JxlBasicInfo()
                guard JxlDecoderGetBasicInfo(handle, &basic) == JXL_DEC_SUCCESS else {
                    throw .undecodable(reason: "JPEG XL: libjxl announced the basic info but returned none")
                }
                info = basic
            case JXL_DEC_COLOR_ENCODING:
                guard let info else { throw .undecodable(reason: "JPEG XL: a colour encoding came before the basic info") }
                var encoding = JxlColorEncoding()
                let hasEncoding = JxlDecoderGetColorAsEncodedProfile(handle, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL,
                                                                     &encoding) == JXL_DEC_SUCCESS
                let original = hasEncoding ? encoding : nil
                if info.uses_original_profile == 0, JXLLoader.hdrTransfer(of: original) == nil {
                    var sRGB = JXLLoader.sRGBEncoding(gray: info.num_color_channels == 1)
                    guard JxlDecoderSetPreferredColorProfile(handle, &sRGB) == JXL_DEC_SUCCESS else {
                        throw .undecodable(reason: "JPEG XL: libjxl refused sRGB as the output colour space")
                    }
                }
                atFrameStart = true
                return Header(info: info, originalEncoding: original)
            default:
                try fail(status, stage: info == nil ? "the basic info" : "the colour encoding")
            }
        }
    }

    /// Throws for a status that ends the decode at `stage` (ERROR, NEED_MORE_INPUT after the
    /// input is closed, SUCCESS before the event wanted, or an event nobody subscribed to).
    func fail(_ status: JxlDecoderStatus, stage: String) throws(ImagingError) -> Never {
        switch status {
        case JXL_DEC_NEED_MORE_INPUT:
            throw .undecodable(reason: "JPEG XL: the data ends before the image is complete (reading \(stage), "
                               + "after all \(source.count) bytes)")
        case JXL_DEC_ERROR:
            // libjxl 0.7 reports no reason through its API.
            throw .undecodable(reason: "JPEG XL: the codestream is invalid while decoding \(stage)")
        case JXL_DEC_SUCCESS:
            throw .undecodable(reason: "JPEG XL: the file ends without \(stage)")
        default:
            throw .undecodable(reason: "JPEG XL: libjxl returned the unexpected status \(status.rawValue) while decoding \(stage)")
        }
    }

    /// Decodes the first displayed frame into `buffer` (`format`, its exact size): after the
    /// header `readHeader` left (or from the start, for a second decode), FRAME, NEED_IMAGE_OUT_BUFFER and the first
    /// FULL_IMAGE (an animation's first frame, composited; later frames are never decoded).
    func decodeFirstFrame(into buffer: UnsafeMutableRawBufferPointer, format: JxlPixelFormat,
                          isCancelled: CancellationCheck?) throws(ImagingError) {
        if !atFrameStart { _ = try readHeader() }
        atFrameStart = false
        var format = format
        while true {
            if isCancelled?() == true { throw .cancelled }
            let status = JxlDecoderProcessInput(handle)
            switch status {
            case JXL_DEC_FRAME:
                sawFrame = true
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                var needed = 0
                guard JxlDecoderImageOutBufferSize(handle, &format, &needed) == JXL_DEC_SUCCESS, needed == buffer.count else {
                    throw .undecodable(reason: "JPEG XL: libjxl wants an output buffer of \(needed) bytes, not the "
                                       + "\(buffer.count) its header gives")
                }
                guard JxlDecoderSetImageOutBuffer(handle, &format, buffer.baseAddress, buffer.count) == JXL_DEC_SUCCESS else {
                    throw .undecodable(reason: "JPEG XL: libjxl refused the output buffer")
                }
            case JXL_DEC_FULL_IMAGE:
                return
            default:
                try fail(status, stage: sawFrame ? "the first frame" : "the first frame's header")
            }
        }
    }
}
