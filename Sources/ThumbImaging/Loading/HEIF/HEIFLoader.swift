import CHeif

/// HEIC/HEIF and AVIF through libheif 1.15 (libde265 for HEVC, dav1d for AV1): the primary
/// image as displayed, or an embedded thumbnail of it when that is large enough (shrink-on-load).
///
/// Orientation is always `.up`: libheif applies `irot`, `imir` and `clap` itself when it
/// decodes, and those boxes are authoritative for HEIF and AVIF — an EXIF orientation tag inside
/// such a file is NOT applied on top (it describes the pixels before the transforms, or repeats
/// them). libvips and the browsers do the same; Pillow's AVIF plugin applies the EXIF tag of
/// pillow__xmp_tags_orientation.avif (orientation 3, no irot) and so shows it upside down where
/// we, Chrome and libvips show it as coded.
final class HEIFLoader: FrameLoader {
    /// Which coded image `load` decoded, for tests and logs.
    enum DecodedImage: Equatable, Sendable {
        case primary
        /// An embedded thumbnail, of this displayed size.
        case thumbnail(width: Int, height: Int)
    }

    let storedWidth: Int
    let storedHeight: Int
    var orientation: Orientation { .up }
    /// What the last `load` decoded (nil before one).
    private(set) var decodedImage: DecodedImage?

    let file: HEIFFile
    let primary: HEIFImageHandle
    let limits: ImageLimits

    init(source: SourceBytes, format: SourceFormat, limits: ImageLimits) throws(ImagingError) {
        let file = try HEIFFile(source, limits: limits)
        let primary = try file.primaryImage()
        // The displayed size (what the plan is made for) and the coded size (what is decoded
        // before the transforms, and may be larger than the crop of a `clap`): both before any pixel.
        try limits.check(width: primary.width, height: primary.height)
        try limits.check(width: primary.codedWidth, height: primary.codedHeight)
        try Self.checkDecoderMemory(primary, limits: limits)
        if format == .avif && !HEIFLibrary.canDecode(heif_compression_AV1) {
            throw .unsupportedFormat(reason: "this libheif has no AV1 decoder")
        }
        self.file = file
        self.primary = primary
        self.limits = limits
        storedWidth = primary.width
        storedHeight = primary.height
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        try load(maxShrink: maxShrink, outputShrink: maxShrink, isCancelled: isCancelled)
    }

    func load(maxShrink: Double, outputShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        if isCancelled?() == true { throw .cancelled }
        var (image, chosen) = chooseImage(maxShrink: maxShrink, outputShrink: max(maxShrink, outputShrink))
        var decoded = try decode(image)
        // The sizes the choice was made by are the file's word (`ispe`); the decoded frame is
        // the truth. A thumbnail whose codestream is another size (another picture, another
        // shape) is never shown: the primary is decoded instead. A primary that disagrees would
        // misplace every crop, and was checked against the limits by its word: refused.
        if decoded.size != (image.width, image.height) {
            guard chosen != .primary else {
                throw .undecodable(reason: "HEIF: the primary image decodes to \(decoded.size.width)x\(decoded.size.height), not the \(image.width)x\(image.height) its header declares")
            }
            (image, chosen) = (primary, .primary)
            decoded = try decode(primary)
            if decoded.size != (primary.width, primary.height) {
                throw .undecodable(reason: "HEIF: the primary image decodes to \(decoded.size.width)x\(decoded.size.height), not the \(primary.width)x\(primary.height) its header declares")
            }
        }
        decodedImage = chosen
        // A single libde265 or dav1d decode cannot be interrupted inside libheif 1.15: its
        // decoding options offer progress callbacks (per grid tile) but no way to stop, so the
        // checks are between steps; the worker's deadline kill covers one long decode.
        if isCancelled?() == true { throw .cancelled }
        // The frame may be reduced by an integer factor while it is interleaved, within the
        // plan's shrink-on-load (what is left of `maxShrink` after a thumbnail's own reduction).
        let loadedShrink = Double(storedWidth) / Double(max(1, image.width))
        let reduction = Self.integerReduction(maxShrink / loadedShrink)
        let pixels: PixelBuffer
        let color: ColorDescription
        if let signal = Self.hdrSignal(of: image, decoded: decoded) {
            // PQ and HLG: tone-mapped to sRGB here, in linear light, before the resampler.
            pixels = try Self.toneMapped(decoded, signal: signal, premultiplied: image.isPremultiplied, reduction: reduction,
                                         isCancelled: isCancelled)
            color = ColorDescription()
        } else {
            pixels = try Self.interleave(decoded, premultiplied: image.isPremultiplied, reduction: reduction, isCancelled: isCancelled)
            color = Self.colorProfile(of: image)
        }
        let warnings = [file.truncationWarning, decoded.firstWarning].compactMap { $0 }
        // Block i of the reduction covers image pixels [i × reduction, (i + 1) × reduction).
        let scale = (x: Double(storedWidth) / Double(max(1, image.width)) * Double(max(1, reduction)),
                     y: Double(storedHeight) / Double(max(1, image.height)) * Double(max(1, reduction)))
        return LoadedFrame(pixels: pixels, iccProfile: color.profile,
                           warning: warnings.isEmpty ? nil : warnings.joined(separator: "; "), storedPixelsPerPixel: scale)
    }

    /// Decodes `image` in libheif's own form, which 1.15 makes planar RGB at 4:4:4 (8 bits, or
    /// 16-bit samples for 10/12-bit files; libheif applies the nclx matrix coefficients and range
    /// of YCbCr), alpha as a fourth plane, or for a monochrome image its gray plane. A grid image
    /// is assembled as exactly that, so no conversion copies it again. thumbd then interleaves.
    private func decode(_ image: HEIFImageHandle) throws(ImagingError) -> HEIFDecodedImage {
        var decoded: OpaquePointer?
        try heif_decode_image(image.handle, &decoded, heif_colorspace_undefined, heif_chroma_undefined, nil).check()
        if let native = decoded {
            let colorspace = heif_image_get_colorspace(native), chroma = heif_image_get_chroma_format(native)
            if colorspace == heif_colorspace_monochrome || (colorspace == heif_colorspace_RGB && chroma == heif_chroma_444) {
                return HEIFDecodedImage(native)
            }
            // Anything else (YCbCr left as it is, by a later libheif): decoded again as RGB.
            heif_image_release(native)
            decoded = nil
        }
        try heif_decode_image(image.handle, &decoded, heif_colorspace_RGB, heif_chroma_444, nil).check()
        guard let decoded else { throw .undecodable(reason: "libheif: the decoder returned no image") }
        return HEIFDecodedImage(decoded)
    }

    /// What libheif allocates for a decode besides the interleaved frame thumbd copies out: the
    /// planar 4:4:4 image (a grid's canvas, or the conversion of a YCbCr frame), one sample per
    /// channel, two bytes each above 8 bits; the coded (ispe) area when it is larger than the
    /// displayed one. The YCbCr frame it converts from is at most that size again and is freed
    /// before the copy. Checked against `maxDecoderMemoryBytes` before decoding.
    static func decoderMemoryBytes(width: Int, height: Int, codedWidth: Int, codedHeight: Int,
                                   hasAlpha: Bool, lumaBits: Int) -> Int {
        func product(_ a: Int, _ b: Int) -> Int {
            let (value, overflow) = a.multipliedReportingOverflow(by: b)
            return overflow ? Int.max : value
        }
        let area = max(product(width, height), product(codedWidth, codedHeight))
        let sampleBytes = lumaBits > 8 ? 2 : 1
        return product(area, (hasAlpha ? 4 : 3) * sampleBytes)
    }

    private static func checkDecoderMemory(_ image: HEIFImageHandle, limits: ImageLimits) throws(ImagingError) {
        let bytes = decoderMemoryBytes(width: image.width, height: image.height, codedWidth: image.codedWidth,
                                       codedHeight: image.codedHeight, hasAlpha: image.hasAlpha, lumaBits: image.lumaBits)
        if bytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "decoding \(image.width)x\(image.height) (\(max(8, image.lumaBits))-bit\(image.hasAlpha ? ", alpha" : "")) needs about \(bytes >> 20) MB, over the \(limits.maxDecoderMemoryBytes >> 20)-MB decoder memory limit")
        }
    }

    /// The largest whole reduction within `shrink` (1 when none), at most 64 a side.
    static func integerReduction(_ shrink: Double) -> Int {
        guard shrink.isFinite, shrink >= 2 else { return 1 }
        return Int(min(shrink, 64).rounded(.down))
    }
}
