/// A PNG whose `cICP` chunk names an HDR transfer (PQ or HLG): decoded whole at its own depth
/// and tone-mapped to sRGB (`HDRToneMapper`), reduced in linear light by the shrink-on-load's
/// whole factor. Every other PNG streams its rows (`PNGRowSource`).
///
/// libpng 1.6.39 (Debian 12) predates `cICP` (1.6.45 reads it), so `PNGChunks` finds it; the
/// PNG third edition says `cICP` overrides `iCCP`, `sRGB` and `gAMA`, and so thumbd does, for
/// every transfer: an SDR one is `PNGRowSource`'s, with the chunk's colour space.
final class PNGHDRLoader: FrameLoader {
    let storedWidth: Int
    let storedHeight: Int
    var orientation: Orientation { .up }

    private let decoder: PNGDecoder
    private let signal: HDRSignal

    init(source: SourceBytes, signal: HDRSignal, limits: ImageLimits) throws(ImagingError) {
        decoder = try PNGDecoder(source: source, limits: limits)
        self.signal = signal
        storedWidth = decoder.width
        storedHeight = decoder.height
        // The whole frame at two bytes a sample (alpha included): the tone mapper needs every
        // row before the first block is done only for Adam7, but holding it keeps one path.
        let (pixels, overflow) = storedWidth.multipliedReportingOverflow(by: storedHeight)
        let bytes = overflow ? Int.max : pixels.multipliedReportingOverflow(by: 8).partialValue
        if overflow || pixels > Int.max / 8 || bytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "PNG: tone-mapping \(storedWidth)x\(storedHeight) HDR samples needs about \(bytes >> 20) MB, over the \(limits.maxDecoderMemoryBytes >> 20)-MB decoder memory limit")
        }
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        let wide = decoder.info.bitDepth == 16
        let (channels, passes) = try decoder.start(applyGamma: false, keep16: wide)
        let sampleBytes = wide ? 2 : 1
        let rowBytes = storedWidth * channels * sampleBytes
        var frame = [UInt8](repeating: 0, count: rowBytes * storedHeight)
        let batch = 32
        let reads = passes * storedHeight
        var done = 0
        while done < reads {
            if isCancelled?() == true { throw .cancelled }
            let count = min(batch, reads - done)
            try frame.withUnsafeMutableBufferPointer { buffer throws(ImagingError) in
                if passes > 1 {
                    try decoder.readInterlacedRows(into: buffer.baseAddress!, rowStride: rowBytes, count: count)
                } else {
                    try decoder.readRows(into: buffer.baseAddress! + done * rowBytes, rowStride: rowBytes, count: count)
                }
            }
            done += count
        }
        let maximum = wide ? 65_535 : 255
        let mapper = HDRToneMapper(signal, maximumCode: maximum)
        let hasAlpha = channels == 4
        let reduction = HEIFLoader.integerReduction(maxShrink)
        let pixels = frame.withUnsafeBytes { bytes in
            mapper.toneMap(width: storedWidth, height: storedHeight, hasAlpha: hasAlpha, alphaMaximum: maximum, reduction: reduction,
                           isCancelled: isCancelled) { y, codes in
                let row = bytes.baseAddress! + y * rowBytes
                for x in 0..<storedWidth {
                    func sample(_ channel: Int) -> Int32 {
                        let index = x * channels + channel
                        return wide ? Int32(row.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self))
                            : Int32(row.load(fromByteOffset: index, as: UInt8.self))
                    }
                    codes[x] = SIMD4(sample(0), sample(1), sample(2), hasAlpha ? sample(3) : Int32(maximum))
                }
            }
        }
        guard let pixels else { throw .cancelled }
        let scale = Double(max(1, reduction))
        return LoadedFrame(pixels: pixels, iccProfile: nil, warning: decoder.warning, storedPixelsPerPixel: (scale, scale))
    }
}

/// The chunks before a PNG's image data, read for what libpng 1.6.39 does not know: `cICP`
/// (coding-independent code points) and `cLLi` (content light level). A pure, bounded walk: at
/// most `maxChunks` chunks, each length checked against the bytes left; CRCs are libpng's to judge.
enum PNGChunks {
    static let maxChunks = 1024

    /// A `cICP` chunk's code points (ITU-T H.273), with `cLLi`'s MaxCLL when there is one.
    struct CodePoints: Equatable {
        var primaries: Int
        var transfer: Int
        var matrix: Int
        var maxCLLNits: Double?

        /// The HDR signal named (PQ or HLG); nil for every other transfer.
        var hdrSignal: HDRSignal? {
            guard let transfer = HDRTransfer(h273: transfer) else { return nil }
            return HDRSignal(transfer: transfer, primaries: Chromaticities.h273(primaries) ?? .bt2020, contentPeakNits: maxCLLNits)
        }

        /// An SDR transfer's colour space as an ICC profile for the thumbnailer's lcms transform
        /// (nil: sRGB already), built as for a HEIF's nclx: the same codes mean the same there.
        var sdrProfile: [UInt8]? {
            HEIFLoader.nclxProfile(primaries: primaries, transfer: transfer,
                                   chromaticities: Chromaticities.h273(primaries) ?? .sRGB).profile
        }
    }

    /// The `cICP` chunk's code points; nil without one, or for a matrix other than 0 (PNG holds
    /// RGB: the third edition makes any other matrix an error, and such a chunk is ignored).
    static func codePoints(_ bytes: UnsafeRawBufferPointer) -> CodePoints? {
        var offset = 8
        var cicp: CodePoints?
        var maxCLLNits: Double?
        for _ in 0..<maxChunks {
            guard offset <= bytes.count - 12 else { break }
            let length = (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard length <= bytes.count - offset - 12 else { break }
            let data = offset + 8
            if type == "IDAT" || type == "IEND" { break }
            if type == "cICP", length == 4 {
                cicp = CodePoints(primaries: Int(bytes[data]), transfer: Int(bytes[data + 1]), matrix: Int(bytes[data + 2]))
            }
            if type == "cLLi", length == 8 {
                let maxCLL = (0..<4).reduce(0) { $0 << 8 | Int(bytes[data + $1]) }
                if maxCLL > 0 { maxCLLNits = Double(maxCLL) / 10_000 }
            }
            offset = data + length + 4
        }
        guard var cicp, cicp.matrix == 0 else { return nil }
        cicp.maxCLLNits = maxCLLNits
        return cicp
    }

    /// The HDR signal a `cICP` chunk names (RGB, matrix 0), with `cLLi`'s MaxCLL; nil otherwise.
    static func hdrSignal(_ bytes: UnsafeRawBufferPointer) -> HDRSignal? { codePoints(bytes)?.hdrSignal }
}
