import CTIFF

extension TIFFLoader {
    struct DecodedPixels {
        var buffer: PixelBuffer
        /// Something about the conversion (a CMYK profile that could not be used), one line.
        var warning: String?
    }

    /// The current directory (`page`), box-reduced by `reduction` as its rows are decoded, a
    /// strip or a row of tiles at a time, with a cancellation check before each.
    func decode(_ page: TIFFDirectory, reduction: Int, iccProfile: [UInt8]?,
                isCancelled: CancellationCheck?) throws(ImagingError) -> DecodedPixels {
        switch route {
        case .rgba: try decodeRGBA(page, reduction: reduction, isCancelled: isCancelled)
        case .cmyk, .float32, .lab, .signedInteger:
            try decodeSamples(page, reduction: reduction, iccProfile: iccProfile, isCancelled: isCancelled)
        }
    }

    private func decodeRGBA(_ page: TIFFDirectory, reduction: Int, isCancelled: CancellationCheck?) throws(ImagingError) -> DecodedPixels {
        let alpha = try file.beginRGBA()
        // libtiff's reader premultiplies colour by an unassociated alpha, but copies grey as it
        // is stored (premultiplied only when the file says the alpha is associated).
        let isGrey = page.photometric == Int(PHOTOMETRIC_MINISBLACK) || page.photometric == Int(PHOTOMETRIC_MINISWHITE)
        let premultiplied = !isGrey || alpha == Int32(EXTRASAMPLE_ASSOCALPHA)
        var reducer = TIFFBoxReducer(width: page.width, height: page.height, factor: reduction, hasAlpha: alpha != 0)
        let band = page.rowsPerChunk
        var raster = [UInt32](repeating: 0, count: page.width * band)
        for top in stride(from: 0, to: page.height, by: band) {
            if isCancelled?() == true { throw .cancelled }
            let rows = top..<min(page.height, top + band)
            try raster.withUnsafeMutableBufferPointer { (words) throws(ImagingError) in
                try file.rgbaRows(rows, into: words.baseAddress!)
                #if _endian(big)
                for index in words.indices { words[index] = words[index].byteSwapped }
                #endif
                // ABGR words (R in the low byte) are R, G, B, A bytes in little-endian memory.
                let bytes = UnsafeRawPointer(words.baseAddress!).assumingMemoryBound(to: UInt8.self)
                reducer.add(bytes, count: rows.count, rowStride: page.width * 4, input: .rgba(premultiplied: premultiplied))
            }
        }
        return DecodedPixels(buffer: reducer.pixels)
    }

    /// CMYK, Lab, signed and float pages, as samples: converted to RGB (RGBA for CMYK with an
    /// alpha sample) a row at a time, then reduced.
    private func decodeSamples(_ page: TIFFDirectory, reduction: Int, iccProfile: [UInt8]?,
                               isCancelled: CancellationCheck?) throws(ImagingError) -> DecodedPixels {
        let bytesPerSample = (page.bitsPerSample + 7) / 8
        let pixelBytes = page.samplesPerPixel * bytesPerSample
        guard page.scanlineBytes == page.width * pixelBytes else {
            throw .undecodable(reason: "TIFF: a row of \(page.width) pixels of \(page.samplesPerPixel) \(page.bitsPerSample)-bit samples "
                               + "is \(page.scanlineBytes) bytes to libtiff")
        }
        var warning: String?
        var transform: ColorProfileTransform?
        if route == .cmyk, let iccProfile {
            transform = try ColorProfileTransform.shared(iccProfile, layout: .cmyk, isCancelled: isCancelled)
            if transform == nil { warning = "the ICC profile is not a usable CMYK one: CMYK converted without it" }
        }
        if route == .lab {
            transform = try ColorProfileTransform.shared([], layout: .lab, isCancelled: isCancelled)
            guard transform != nil else { throw .undecodable(reason: "TIFF: lcms cannot build a Lab to sRGB transform") }
        }
        let alpha = route == .cmyk ? Self.cmykAlpha(page) : nil
        let channels = alpha == nil ? 3 : 4
        var reducer = TIFFBoxReducer(width: page.width, height: page.height, factor: reduction, hasAlpha: alpha != nil)
        let band = page.rowsPerChunk
        var samples = [UInt8](repeating: 0, count: page.scanlineBytes * band)
        // What lcms (or the naive conversion) reads: CMYK 4 bytes a pixel, Lab 3; big enough for either.
        var converted = [UInt8](repeating: 0, count: route == .cmyk || route == .lab ? page.width * 4 : 0)
        var rgb = [UInt8](repeating: 0, count: page.width * 3)
        var out = [UInt8](repeating: 0, count: page.width * channels)
        for top in stride(from: 0, to: page.height, by: band) {
            if isCancelled?() == true { throw .cancelled }
            let rows = top..<min(page.height, top + band)
            try samples.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                try file.sampleRows(rows, into: buffer.baseAddress!, rowStride: page.scanlineBytes)
            }
            for index in 0..<rows.count {
                samples.withUnsafeBufferPointer { buffer in
                    let row = UnsafeRawPointer(buffer.baseAddress! + index * page.scanlineBytes)
                    switch route {
                    case .cmyk:
                        Self.cmyk8(row, samplesPerPixel: page.samplesPerPixel, wide: bytesPerSample == 2, width: page.width,
                                   alpha: alpha, into: &converted, alphaInto: &out)
                    case .lab:
                        Self.labToICC8(row, samplesPerPixel: page.samplesPerPixel, signed: page.photometric == Int(PHOTOMETRIC_CIELAB),
                                       width: page.width, into: &converted)
                    case .signedInteger:
                        Self.signedToRGB8(row, samplesPerPixel: page.samplesPerPixel, wide: bytesPerSample == 2, width: page.width,
                                          isRGB: page.photometric == Int(PHOTOMETRIC_RGB),
                                          whiteIsZero: page.photometric == Int(PHOTOMETRIC_MINISWHITE), into: &rgb)
                    case .float32:
                        Self.floatToRGB8(row, samplesPerPixel: page.samplesPerPixel, width: page.width, into: &rgb)
                    case .rgba:
                        break // read by decodeRGBA
                    }
                }
                if route == .cmyk || route == .lab {
                    converted.withUnsafeBufferPointer { input in
                        rgb.withUnsafeMutableBufferPointer { output in
                            if let transform {
                                transform.apply(input: input.baseAddress!, output: output.baseAddress!, pixelCount: page.width)
                            } else {
                                CMYKConversion.naive(input.baseAddress!, into: output.baseAddress!, pixelCount: page.width, inverted: false)
                            }
                        }
                    }
                }
                if alpha != nil {
                    for x in 0..<page.width {
                        for channel in 0..<3 { out[x * 4 + channel] = rgb[x * 3 + channel] }
                    }
                    out.withUnsafeBufferPointer { reducer.add($0.baseAddress!, count: 1, rowStride: page.width * 4, input: .rgba(premultiplied: false)) }
                } else {
                    rgb.withUnsafeBufferPointer { reducer.add($0.baseAddress!, count: 1, rowStride: page.width * 3, input: .rgb) }
                }
            }
        }
        return DecodedPixels(buffer: reducer.pixels, warning: warning)
    }

    /// The alpha sample of a CMYK page: the first extra sample (the fifth), when it says it is
    /// alpha. Associated alpha has the inks scaled by it, which `cmyk8` undoes.
    struct CMYKAlpha { var associated: Bool }

    static func cmykAlpha(_ page: TIFFDirectory) -> CMYKAlpha? {
        guard page.samplesPerPixel >= 5, page.extraSampleCount >= 1 else { return nil }
        switch page.firstExtraSample {
        case Int(EXTRASAMPLE_UNASSALPHA): return CMYKAlpha(associated: false)
        case Int(EXTRASAMPLE_ASSOCALPHA): return CMYKAlpha(associated: true)
        default: return nil
        }
    }

    /// The first four samples of each pixel (C, M, Y, K) as bytes, and with `alpha` the fifth
    /// into every fourth byte of `alphaInto` (RGBA rows). libtiff hands 16-bit samples over in
    /// this machine's byte order.
    static func cmyk8(_ row: UnsafeRawPointer, samplesPerPixel: Int, wide: Bool, width: Int, alpha: CMYKAlpha? = nil,
                      into cmyk: inout [UInt8], alphaInto rgba: inout [UInt8]) {
        cmyk.withUnsafeMutableBufferPointer { out in
            rgba.withUnsafeMutableBufferPointer { rgbaOut in
                func sample(_ x: Int, _ channel: Int) -> Int {
                    let index = x * samplesPerPixel + channel
                    if wide { return (Int(row.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self)) * 255 + 32_767) / 65_535 }
                    return Int(row.load(fromByteOffset: index, as: UInt8.self))
                }
                for x in 0..<width {
                    let opacity = alpha == nil ? 255 : sample(x, 4)
                    for channel in 0..<4 {
                        var ink = sample(x, channel)
                        // Premultiplied ink over a clear pixel has no colour: 0 stays 0.
                        if alpha?.associated == true { ink = opacity == 0 ? 0 : min(255, (ink * 255 + opacity / 2) / opacity) }
                        out[x * 4 + channel] = UInt8(ink)
                    }
                    if alpha != nil { rgbaOut[x * 4 + 3] = UInt8(opacity) }
                }
            }
        }
    }

    /// L*, a*, b* into ICC's 8-bit encoding (lcms's TYPE_Lab_8, 3 bytes a pixel): CIELab stores a* and b* as
    /// signed bytes, ICCLab offset by 128; flipping the top bit turns the one into the other.
    static func labToICC8(_ row: UnsafeRawPointer, samplesPerPixel: Int, signed: Bool, width: Int, into lab: inout [UInt8]) {
        let samples = row.assumingMemoryBound(to: UInt8.self)
        let flip: UInt8 = signed ? 0x80 : 0
        lab.withUnsafeMutableBufferPointer { out in
            for x in 0..<width {
                out[x * 3] = samples[x * samplesPerPixel]
                out[x * 3 + 1] = samples[x * samplesPerPixel + 1] ^ flip
                out[x * 3 + 2] = samples[x * samplesPerPixel + 2] ^ flip
            }
        }
    }

    /// Signed samples offset by half their range (−128…127 to 0…255; −32768…32767 to 0…65535,
    /// then rounded to 8 bits), as ImageMagick reads them. libvips clips instead (every negative
    /// value black): that hides half of what the samples can say, where the offset keeps every
    /// distinct value distinct and in order, which is what a picture of the data needs. The
    /// top bit flipped is exactly that offset in two's complement. Extra samples are left out.
    static func signedToRGB8(_ row: UnsafeRawPointer, samplesPerPixel: Int, wide: Bool, width: Int, isRGB: Bool, whiteIsZero: Bool,
                             into rgb: inout [UInt8]) {
        rgb.withUnsafeMutableBufferPointer { out in
            for x in 0..<width {
                for channel in 0..<3 {
                    let index = x * samplesPerPixel + (isRGB ? channel : 0)
                    let value = wide ? UInt8((Int(row.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self) ^ 0x8000) * 255 + 32_767) / 65_535)
                        : row.load(fromByteOffset: index, as: UInt8.self) ^ 0x80
                    out[x * 3 + channel] = whiteIsZero ? 255 - value : value
                }
            }
        }
    }

    /// Float samples taken as 0 (black) to 1 (white), the convention of float TIFF writers
    /// (Photoshop's 32-bit mode, ImageMagick's HDRI), clamped; NaN is black. libvips 8.14 casts
    /// them to bytes as they are instead (0–1 all becomes black).
    static func floatToRGB8(_ row: UnsafeRawPointer, samplesPerPixel: Int, width: Int, into rgb: inout [UInt8]) {
        let samples = row.assumingMemoryBound(to: Float.self)
        func byte(_ value: Float) -> UInt8 {
            guard value > 0 else { return 0 }
            return value >= 1 ? 255 : UInt8((value * 255).rounded())
        }
        rgb.withUnsafeMutableBufferPointer { out in
            for x in 0..<width {
                for channel in 0..<3 {
                    out[x * 3 + channel] = byte(samples[x * samplesPerPixel + (samplesPerPixel == 1 ? 0 : channel)])
                }
            }
        }
    }
}
