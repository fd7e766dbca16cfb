import CTIFF

/// TIFF through libtiff 4.5, from memory or (a large file, see `SourceBytes`) read where needed
/// from its file: the first page (or a reduced-resolution copy of it, for shrink-on-load), every
/// size checked against `ImageLimits` from the tags before a pixel buffer exists.
///
/// Pixels come from libtiff's RGBA reader (`TIFFRGBAImage`: 1–16-bit grey, RGB, palette,
/// YCbCr, naive CMYK, every codec libtiff has, strips or tiles, chunky or planar), read a
/// strip or a row of tiles at a time with a cancellation check between two, and box-reduced as
/// they come, so a large page never exists at full size. The kinds libtiff's reader does not
/// take, or takes badly, are read as samples instead: 8- and 16-bit chunky CMYK (through its ICC
/// profile when it has one, as thumbd's JPEG CMYK; an alpha sample kept), 8-bit chunky Lab
/// (through lcms), 8- and 16-bit signed grey or RGB, and 32-bit float grey or RGB.
///
/// Orientation: libtiff is asked for the rows as stored, and the Orientation tag is this
/// loader's `orientation`, applied after resampling like a JPEG's EXIF one. libtiff's reader
/// can flip but not transpose (5–8), and the displayed size of a 5–8 page has its sides swapped.
final class TIFFLoader: FrameLoader {
    /// Which page `load` decoded, for tests and logs.
    enum DecodedImage: Equatable, Sendable {
        case firstPage
        /// A reduced-resolution copy of the first page (a pyramid level), of this stored size.
        case reducedPage(width: Int, height: Int)
    }

    /// How a page's pixels are read.
    enum Route: Equatable {
        case rgba
        case cmyk
        case float32
        /// 8-bit CIELab (TIFF's signed a*, b*) or ICCLab, through lcms like every other colour.
        case lab
        /// 8- or 16-bit signed grey or RGB (SampleFormat 2).
        case signedInteger
    }

    let storedWidth: Int
    let storedHeight: Int
    let orientation: Orientation
    private(set) var decodedImage: DecodedImage?

    let file: TIFFFile
    let first: TIFFDirectory
    let route: Route
    let limits: ImageLimits
    /// The first page's ICC profile: a reduced page describes the same pixels, whether or not
    /// its writer repeated the tag.
    let iccProfile: [UInt8]?

    /// Directories of the main chain looked at for reduced copies: a pyramid of a 65 500-px
    /// page has 12 levels. Reading a directory costs only its tags.
    static let maxDirectoriesSearched = 16
    /// Strips or tiles of one page. A real page has at most tens of thousands (a 65 500-row
    /// page a row a strip; 256-px tiles of a 250 MP page: 3 800); a million 1-pixel tiles
    /// would each cost a codec call.
    static let maxChunks = 1 << 20

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        file = try TIFFFile(source, limits: limits)
        first = try file.info()
        try limits.check(width: first.width, height: first.height)
        route = try Self.route(for: first)
        try Self.checkCost(first, route: route, limits: limits)
        self.limits = limits
        iccProfile = file.iccProfile()
        storedWidth = first.width
        storedHeight = first.height
        orientation = first.orientation
    }

    static func route(for page: TIFFDirectory) throws(ImagingError) -> Route {
        let bits = page.bitsPerSample
        if page.sampleFormat == Int(SAMPLEFORMAT_IEEEFP) {
            let chunkyGreyOrRGB = !page.isPlanar && ((page.photometric == Int(PHOTOMETRIC_MINISBLACK) && page.samplesPerPixel == 1)
                                                     || (page.photometric == Int(PHOTOMETRIC_RGB) && page.samplesPerPixel == 3))
            guard bits == 32 else {
                throw .unsupportedFormat(reason: "TIFF: \(bits)-bit floating-point samples are not supported")
            }
            guard chunkyGreyOrRGB else {
                throw .unsupportedFormat(reason: "TIFF: 32-bit floating-point samples are supported only as chunky grey or RGB "
                                         + "(this page: photometric \(page.photometric), \(page.samplesPerPixel) samples a pixel"
                                         + (page.isPlanar ? ", planar)" : ")"))
            }
            return .float32
        }
        if page.sampleFormat == Int(SAMPLEFORMAT_COMPLEXINT) || page.sampleFormat == Int(SAMPLEFORMAT_COMPLEXIEEEFP) {
            throw .unsupportedFormat(reason: "TIFF: complex-valued samples are not supported")
        }
        if page.photometric == Int(PHOTOMETRIC_SEPARATED), page.inkSet == Int(INKSET_CMYK), page.samplesPerPixel >= 4,
           !page.isPlanar, bits == 8 || bits == 16 {
            return .cmyk
        }
        // libtiff's reader converts Lab with a display model of its own, far from what lcms
        // (and Pillow, and browsers through their CMS) make of the same values.
        if page.photometric == Int(PHOTOMETRIC_CIELAB) || page.photometric == Int(PHOTOMETRIC_ICCLAB),
           page.samplesPerPixel >= 3, !page.isPlanar, bits == 8 {
            return .lab
        }
        if page.sampleFormat == Int(SAMPLEFORMAT_INT) {
            let grey = page.photometric == Int(PHOTOMETRIC_MINISBLACK) || page.photometric == Int(PHOTOMETRIC_MINISWHITE)
            let rgb = page.photometric == Int(PHOTOMETRIC_RGB) && page.samplesPerPixel >= 3
            // libtiff's reader would take the samples as unsigned: negative ones bright.
            guard !page.isPlanar, bits == 8 || bits == 16, (grey && page.samplesPerPixel >= 1) || rgb else {
                throw .unsupportedFormat(reason: "TIFF: signed samples are supported only as chunky 8- or 16-bit grey or RGB "
                                         + "(this page: photometric \(page.photometric), \(page.samplesPerPixel) \(bits)-bit samples a pixel"
                                         + (page.isPlanar ? ", planar)" : ")"))
            }
            return .signedInteger
        }
        return .rgba
    }

    /// The decode's memory, from the tags: one strip or tile (each plane's, for a planar page),
    /// and the band of rows it yields, as ABGR words or samples. A tile far larger than its page
    /// (a 1×1 page claiming 2^31-byte tiles) is refused, though libtiff would refuse it too.
    static func checkCost(_ page: TIFFDirectory, route: Route, limits: ImageLimits) throws(ImagingError) {
        func product(_ values: Int...) -> Int {
            values.reduce(1) { total, value in
                let (result, overflow) = total.multipliedReportingOverflow(by: value)
                return overflow || value < 0 ? Int.max : result
            }
        }
        guard page.chunkBytes > 0, page.chunkCount > 0 else {
            throw .undecodable(reason: "TIFF: the page's \(page.isTiled ? "tiles" : "strips") have no size (\(page.chunkBytes) bytes, \(page.chunkCount) of them)")
        }
        if page.chunkCount > maxChunks {
            throw .tooLarge(reason: "TIFF: \(page.chunkCount) \(page.isTiled ? "tiles" : "strips") in one page, over the \(maxChunks) limit")
        }
        if page.isTiled {
            try limits.check(width: page.tileWidth, height: page.tileLength)
        }
        let decodedPage = product(page.width, page.height, max(1, page.samplesPerPixel), max(1, page.bitsPerSample + 7) / 8)
        let chunkLimit = min(limits.maxDecoderMemoryBytes, max(16 << 20, product(decodedPage, 4)))
        let chunks = product(page.chunkBytes, page.isPlanar ? max(1, page.samplesPerPixel) : 1)
        if chunks > chunkLimit {
            throw .tooLarge(reason: "TIFF: one \(page.isTiled ? "tile" : "strip") of a \(page.width)x\(page.height) page decodes to "
                            + "\(chunks) bytes, over the \(chunkLimit)-byte limit for it")
        }
        let band = route == .rgba ? product(page.width, page.rowsPerChunk, 4) : product(page.scanlineBytes, page.rowsPerChunk)
        let total = band > Int.max - chunks ? Int.max : band + chunks
        if total > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "TIFF: decoding \(page.width)x\(page.height) a \(page.isTiled ? "tile row" : "strip") at a time "
                            + "needs \(total) bytes, over the \(limits.maxDecoderMemoryBytes)-byte decoder memory limit")
        }
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        try load(maxShrink: maxShrink, outputShrink: maxShrink, isCancelled: isCancelled)
    }

    func load(maxShrink: Double, outputShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        if isCancelled?() == true { throw .cancelled }
        let (page, chosen) = try choosePage(maxShrink: maxShrink, outputShrink: max(maxShrink, outputShrink))
        decodedImage = chosen
        // The frame's warning is what the decode concealed: libtiff's words on tags it skipped
        // (an unknown private tag, say) or on directories looked at and not used are not that.
        file.clearMessages()
        let pageShrink = Double(storedWidth) / Double(max(1, page.width))
        let reduction = HEIFLoader.integerReduction(maxShrink / pageShrink)
        let pixels: DecodedPixels
        do {
            pixels = try decode(page, reduction: reduction, iccProfile: iccProfile, isCancelled: isCancelled)
        } catch {
            // A strip that would not decode may be one rewritten under the decoder: say so.
            try file.confirmSourceUnchanged()
            throw error
        }
        try file.confirmSourceUnchanged()
        let decodeError = file.error.map { "libtiff: \($0) (parts of the image may be missing)" }
        let warnings = [file.warning, decodeError, pixels.warning].compactMap { $0 }
        // Block i of the reduction covers page pixels [i × reduction, (i + 1) × reduction).
        let scale = (x: Double(storedWidth) / Double(max(1, page.width)) * Double(reduction),
                     y: Double(storedHeight) / Double(max(1, page.height)) * Double(reduction))
        // CMYK and Lab were converted to sRGB while decoding.
        return LoadedFrame(pixels: pixels.buffer, iccProfile: route == .cmyk || route == .lab ? nil : iccProfile,
                           warning: warnings.isEmpty ? nil : warnings.joined(separator: "; "), storedPixelsPerPixel: scale)
    }
}
