/// JPEG: libjpeg-turbo's scaled IDCT (with only the scans a 1/8 decode needs of a progressive
/// file), column crops, CMYK to RGB (through the file's profile, or naive) as rows are read.
final class JPEGRowSource: RowSource {
    let decoder: JPEGDecoder
    let limits: ImageLimits
    let isCancelled: CancellationCheck?
    private var cmykTransform: ColorProfileTransform?
    private var inverted = false
    private var rowWidth = 0
    private var decodedRows: [UInt8] = []

    init(_ source: SourceBytes, limits: ImageLimits, isCancelled: CancellationCheck?, selectsScans: Bool = true) throws(ImagingError) {
        decoder = try JPEGDecoder(source: source, limits: limits, isCancelled: isCancelled, selectsScans: selectsScans)
        self.limits = limits
        self.isCancelled = isCancelled
    }

    var storedWidth: Int { decoder.storedWidth }
    var storedHeight: Int { decoder.storedHeight }
    var orientation: Orientation { decoder.orientation }
    var shrinkOnLoad: ShrinkOnLoad { .dctScale }
    var streamsRowsIntoLanczos: Bool { true }
    var warning: String? { decoder.warning }
    var skippedScanBytes: Int { decoder.skippedScanBytes }

    func start(_ hint: LoadHint) throws(ImagingError) -> RowFrame {
        if decoder.isCMYK {
            inverted = decoder.header.sawAdobeMarker != 0
            cmykTransform = try ColorProfileTransform.shared(decoder.iccProfile(), layout: inverted ? .cmykInverted : .cmyk,
                                                             isCancelled: isCancelled)
        }
        let scaled = try decoder.start(scaleDenominator: hint.dctDenominator)
        rowWidth = scaled.width
        let shrink = Double(hint.dctDenominator)
        return RowFrame(width: scaled.width, height: scaled.height, channels: 3, storedPixelsPerPixelX: shrink, storedPixelsPerPixelY: shrink)
    }

    func cropColumns(_ wanted: Range<Int>) throws(ImagingError) -> Range<Int>? {
        let columns = try decoder.cropColumns(wanted)
        rowWidth = columns.count
        return columns
    }

    func readRows(into destination: UnsafeMutablePointer<UInt8>, rowStride: Int, maxRows: Int) throws(ImagingError) -> Int {
        guard decoder.isCMYK else { return try decoder.readRows(into: destination, rowStride: rowStride, maxRows: maxRows) }
        let cmykStride = rowWidth * 4
        if decodedRows.count < cmykStride * maxRows { decodedRows = [UInt8](repeating: 0, count: cmykStride * maxRows) }
        let count = try decodedRows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
            try decoder.readRows(into: buffer.baseAddress!, rowStride: cmykStride, maxRows: maxRows)
        }
        decodedRows.withUnsafeBufferPointer { cmyk in
            for row in 0..<count {
                let from = cmyk.baseAddress! + row * cmykStride, to = destination + row * rowStride
                if let cmykTransform {
                    cmykTransform.apply(input: from, output: to, pixelCount: rowWidth)
                } else {
                    CMYKConversion.naive(from, into: to, pixelCount: rowWidth, inverted: inverted)
                }
            }
        }
        return count
    }

    /// CMYK rows were converted as they were read.
    func colourTransform() throws(ImagingError) -> ColorProfileTransform? {
        decoder.isCMYK ? nil : try ColorProfileTransform.shared(decoder.iccProfile(), layout: .rgb, isCancelled: isCancelled)
    }
}

/// PNG: rows streamed as libpng gives them (gamma applied unless an ICC profile describes the
/// curve: PNG spec 11.3.3.3). A `cICP` chunk (SDR transfers; PQ and HLG go to `PNGHDRLoader`)
/// overrides both `gAMA` and `iCCP`, as the third edition says. Adam7 images are read whole
/// first, since their passes fill the frame out of order, in slices with a cancellation check between them.
final class PNGRowSource: RowSource {
    let decoder: PNGDecoder
    let codePoints: PNGChunks.CodePoints?
    let isCancelled: CancellationCheck?
    private var channels = 3
    private var nextRow = 0
    /// The whole frame of an interlaced image, once read.
    private var interlaced: [UInt8]?
    private var passes = 1

    init(_ source: SourceBytes, limits: ImageLimits, codePoints: PNGChunks.CodePoints? = nil,
         isCancelled: CancellationCheck?) throws(ImagingError) {
        decoder = try PNGDecoder(source: source, limits: limits)
        self.codePoints = codePoints
        self.isCancelled = isCancelled
    }

    var storedWidth: Int { decoder.width }
    var storedHeight: Int { decoder.height }
    var orientation: Orientation { .up }
    var shrinkOnLoad: ShrinkOnLoad { .none }
    var streamsRowsIntoLanczos: Bool { false }
    var warning: String? { decoder.warning }
    var skippedScanBytes: Int { 0 }

    func start(_ hint: LoadHint) throws(ImagingError) -> RowFrame {
        let layout = try decoder.start(applyGamma: codePoints == nil && decoder.iccProfile == nil)
        (channels, passes) = (layout.channels, layout.passes)
        return RowFrame(width: decoder.width, height: decoder.height, channels: channels)
    }

    func cropColumns(_ wanted: Range<Int>) throws(ImagingError) -> Range<Int>? { nil }

    func readRows(into destination: UnsafeMutablePointer<UInt8>, rowStride: Int, maxRows: Int) throws(ImagingError) -> Int {
        let count = min(maxRows, decoder.height - nextRow)
        guard count > 0 else { return 0 }
        if passes > 1 {
            let frame: [UInt8]
            if let interlaced { frame = interlaced } else { frame = try readInterlaced(rowStride: rowStride) }
            frame.withUnsafeBufferPointer { buffer in
                (destination).update(from: buffer.baseAddress! + nextRow * rowStride, count: count * rowStride)
            }
        } else {
            try decoder.readRows(into: destination, rowStride: rowStride, count: count)
        }
        nextRow += count
        return count
    }

    private func readInterlaced(rowStride: Int) throws(ImagingError) -> [UInt8] {
        var image = [UInt8](repeating: 0, count: rowStride * decoder.height)
        // Passes × height cannot overflow: passes is 7 and height fits in 32 bits.
        var remaining = passes * decoder.height
        while remaining > 0 {
            let count = min(Thumbnailer.batchRows, remaining)
            try image.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                try decoder.readInterlacedRows(into: buffer.baseAddress!, rowStride: rowStride, count: count)
            }
            remaining -= count
            if remaining > 0, isCancelled?() == true { throw .cancelled }
        }
        interlaced = image
        return image
    }

    func colourTransform() throws(ImagingError) -> ColorProfileTransform? {
        let profile = codePoints != nil ? codePoints?.sdrProfile : decoder.iccProfile
        return try ColorProfileTransform.shared(profile, layout: channels == 4 ? .rgba : .rgb, isCancelled: isCancelled)
    }
}

/// Frame-at-once formats (WebP, GIF, HEIF, AVIF, TIFF, JPEG XL): the loader's reduced frame, handed out as rows.
final class FrameRowSource: RowSource {
    let loader: any FrameLoader
    let isCancelled: CancellationCheck?
    private var frame: LoadedFrame?
    private var nextRow = 0

    init(_ loader: any FrameLoader, isCancelled: CancellationCheck?) {
        self.loader = loader
        self.isCancelled = isCancelled
    }

    var storedWidth: Int { loader.storedWidth }
    var storedHeight: Int { loader.storedHeight }
    var orientation: Orientation { loader.orientation }
    var shrinkOnLoad: ShrinkOnLoad { .frame }
    var streamsRowsIntoLanczos: Bool { false }
    var warning: String? { frame?.warning }
    var skippedScanBytes: Int { 0 }

    func start(_ hint: LoadHint) throws(ImagingError) -> RowFrame {
        let loaded = try loader.load(maxShrink: hint.maxShrink, outputShrink: hint.outputShrink, isCancelled: isCancelled)
        let pixels = loaded.pixels
        guard pixels.width > 0, pixels.height > 0 else { throw .undecodable(reason: "the decoder returned no pixels") }
        frame = loaded
        return RowFrame(width: pixels.width, height: pixels.height, channels: pixels.channels,
                        storedPixelsPerPixelX: loaded.storedPixelsPerPixel?.x ?? Double(loader.storedWidth) / Double(pixels.width),
                        storedPixelsPerPixelY: loaded.storedPixelsPerPixel?.y ?? Double(loader.storedHeight) / Double(pixels.height))
    }

    func cropColumns(_ wanted: Range<Int>) throws(ImagingError) -> Range<Int>? { nil }

    func readRows(into destination: UnsafeMutablePointer<UInt8>, rowStride: Int, maxRows: Int) throws(ImagingError) -> Int {
        guard let pixels = frame?.pixels else { return 0 }
        let count = min(maxRows, pixels.height - nextRow)
        guard count > 0 else { return 0 }
        pixels.bytes.withUnsafeBufferPointer { buffer in
            for row in 0..<count {
                (destination + row * rowStride).update(from: buffer.baseAddress! + (nextRow + row) * pixels.rowBytes,
                                                       count: pixels.width * pixels.channels)
            }
        }
        nextRow += count
        return count
    }

    func colourTransform() throws(ImagingError) -> ColorProfileTransform? {
        guard let frame else { return nil }
        return try ColorProfileTransform.shared(frame.iccProfile, layout: frame.pixels.channels == 4 ? .rgba : .rgb,
                                                isCancelled: isCancelled)
    }
}
