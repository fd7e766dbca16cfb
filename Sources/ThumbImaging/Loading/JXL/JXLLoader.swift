import CJXL

/// JPEG XL through libjxl 0.7 (single-threaded: no parallel runner, the decode runs inside the
/// worker's seccomp sandbox). `init` reads the header (basic info and colour encoding) and checks
/// it against the limits before any pixel buffer exists; `load` decodes the first displayed frame.
///
/// Orientation is `.up` and the stored size is the displayed one: libjxl applies the codestream's
/// orientation itself (`JxlDecoderSetKeepOrientation` left false) while it writes the output
/// buffer, so it costs no extra pass, and the header's orientation is authoritative for JPEG XL
/// (an Exif box inside the container is not applied on top; libvips and djxl agree).
///
/// Shrink-on-load: libjxl 0.7 has no scaled decode. Its progressive DC pass
/// (`JxlDecoderSetProgressiveDetail(kDC)` + `JxlDecoderFlushImage`) gives a full-size image
/// upsampled from the 1:8 DC, which saves decode time but no memory, only for VarDCT files, and
/// with visibly softer thumbnails than the full decode; thumbd decodes fully and reduces by an
/// integer block factor while converting to 8 bits (`storedPixelsPerPixel` says by how much).
///
/// Cancellation is checked between the decoder's events; one pass over a frame cannot be
/// interrupted inside libjxl (the worker's deadline kill covers a long one).
final class JXLLoader: FrameLoader {
    let storedWidth: Int
    let storedHeight: Int
    var orientation: Orientation { .up }

    let source: SourceBytes
    let limits: ImageLimits
    let decoder: JXLDecoder
    let info: JxlBasicInfo
    /// The pixels libjxl hands out: RGB or RGBA (grey is expanded by libjxl), 8 bits unless the
    /// transfer is HDR (16 bits, kept for the tone mapper).
    let pixelFormat: JxlPixelFormat
    let color: ColorDescription
    let hdr: HDRTransfer?
    /// For `hdr`: the signal the tone mapper reads.
    let hdrSignal: HDRSignal?

    /// The largest ICC profile taken from a file (the largest in the corpus, a CMYK one, is 544 KB).
    static let maxICCProfileBytes = 8 << 20

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        self.source = source
        self.limits = limits
        decoder = try JXLDecoder(source)
        let header = try decoder.readHeader()
        info = header.info
        // Sides as displayed: orientations 5–8 swap them (libjxl turns the frame).
        let width = Int(info.xsize), height = Int(info.ysize)
        let turned = info.orientation.rawValue >= 5
        storedWidth = turned ? height : width
        storedHeight = turned ? width : height
        try limits.check(width: width, height: height)
        let colorChannels = Int(info.num_color_channels)
        guard colorChannels == 1 || colorChannels == 3 else {
            throw .undecodable(reason: "JPEG XL: the basic info declares \(colorChannels) colour channels")
        }
        hdr = Self.hdrTransfer(of: header.originalEncoding)
        hdrSignal = hdr.flatMap { transfer in
            header.originalEncoding.map { Self.hdrSignal(transfer, encoding: $0, intensityTarget: header.info.intensity_target) }
        }
        let bytesPerSample = hdr == nil ? 1 : 2
        let channels = info.alpha_bits > 0 ? 4 : 3
        pixelFormat = JxlPixelFormat(num_channels: UInt32(channels), data_type: bytesPerSample == 1 ? JXL_TYPE_UINT8 : JXL_TYPE_UINT16,
                                     endianness: JXL_NATIVE_ENDIAN, align: 0)
        try Self.checkDecoderMemory(info, outputChannels: channels, bytesPerSample: bytesPerSample, limits: limits)
        color = try Self.colorDescription(decoder, hdr: hdr, isGray: colorChannels == 1, maxICCBytes: Self.maxICCProfileBytes)
    }

    /// What a decode holds at its peak, bytes: the output buffer thumbd allocates (width × height ×
    /// channels × bytes per sample) and libjxl's own working memory, taken as one 32-bit sample
    /// per pixel of every channel, extra ones included: what libjxl 0.7 keeps whole for a frame
    /// it cannot render group by group (a progressive or multi-layer frame, modular channels,
    /// reference frames for patches); a plain frame needs less. Measured with `thumbd render` (no
    /// sandbox) on a 4000x3000 photo: 100 MB peak for lossy (XYB, -d 1) and 72 MB for lossless,
    /// where this gives 36 + 144 = 180 MB; djxl itself peaks at 364 MB (it keeps a float copy).
    static func decoderMemoryBytes(width: Int, height: Int, channels: Int, outputChannels: Int, bytesPerSample: Int) -> Int {
        func product(_ values: Int...) -> Int {
            values.reduce(1) { total, value in
                let (result, overflow) = total.multipliedReportingOverflow(by: value)
                return overflow ? Int.max : result
            }
        }
        let output = product(width, height, outputChannels, bytesPerSample)
        let working = product(width, height, channels, 4)
        let (sum, overflow) = output.addingReportingOverflow(working)
        return overflow ? Int.max : sum
    }

    private static func checkDecoderMemory(_ info: JxlBasicInfo, outputChannels: Int, bytesPerSample: Int,
                                           limits: ImageLimits) throws(ImagingError) {
        // Extra channels (alpha, depth, spot colours, CMYK's K) are decoded whole as well.
        let channels = Int(info.num_color_channels) + Int(min(info.num_extra_channels, 4096))
        let bytes = decoderMemoryBytes(width: Int(info.xsize), height: Int(info.ysize), channels: channels,
                                       outputChannels: outputChannels, bytesPerSample: bytesPerSample)
        if bytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "JPEG XL: decoding \(info.xsize)x\(info.ysize) with \(channels) channels needs about "
                            + "\(bytes >> 20) MB, over the \(limits.maxDecoderMemoryBytes >> 20)-MB decoder memory limit")
        }
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        if isCancelled?() == true { throw .cancelled }
        let reduction = HEIFLoader.integerReduction(maxShrink)
        let pixels = try decodeFirstFrame(reduction: reduction, isCancelled: isCancelled)
        // Block i of the reduction covers frame pixels [i × reduction, (i + 1) × reduction).
        let scale = reduction > 1 ? (x: Double(reduction), y: Double(reduction)) : nil
        return LoadedFrame(pixels: pixels, iccProfile: color.profile, warning: color.warning, storedPixelsPerPixel: scale)
    }
}
