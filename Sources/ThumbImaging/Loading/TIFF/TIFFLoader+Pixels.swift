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
        case .cmyk, .float32: try decodeSamples(page, reduction: reduction, iccProfile: iccProfile, isCancelled: isCancelled)
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

    /// CMYK and float pages, as samples: converted to RGB a row at a time, then reduced.
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
        var reducer = TIFFBoxReducer(width: page.width, height: page.height, factor: reduction, hasAlpha: false)
        let band = page.rowsPerChunk
        var samples = [UInt8](repeating: 0, count: page.scanlineBytes * band)
        var cmyk = [UInt8](repeating: 0, count: route == .cmyk ? page.width * 4 : 0)
        var rgb = [UInt8](repeating: 0, count: page.width * 3)
        for top in stride(from: 0, to: page.height, by: band) {
            if isCancelled?() == true { throw .cancelled }
            let rows = top..<min(page.height, top + band)
            try samples.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                try file.sampleRows(rows, into: buffer.baseAddress!, rowStride: page.scanlineBytes)
            }
            for index in 0..<rows.count {
                samples.withUnsafeBufferPointer { buffer in
                    let row = UnsafeRawPointer(buffer.baseAddress! + index * page.scanlineBytes)
                    if route == .cmyk {
                        Self.cmyk8(row, samplesPerPixel: page.samplesPerPixel, wide: bytesPerSample == 2, width: page.width, into: &cmyk)
                        cmyk.withUnsafeBufferPointer { ink in
                            rgb.withUnsafeMutableBufferPointer { out in
                                if let transform {
                                    transform.apply(input: ink.baseAddress!, output: out.baseAddress!, pixelCount: page.width)
                                } else {
                                    CMYKConversion.naive(ink.baseAddress!, into: out.baseAddress!, pixelCount: page.width, inverted: false)
                                }
                            }
                        }
                    } else {
                        Self.floatToRGB8(row, samplesPerPixel: page.samplesPerPixel, width: page.width, into: &rgb)
                    }
                }
                rgb.withUnsafeBufferPointer { reducer.add($0.baseAddress!, count: 1, rowStride: page.width * 3, input: .rgb) }
            }
        }
        return DecodedPixels(buffer: reducer.pixels, warning: warning)
    }

    /// The first four samples of each pixel (C, M, Y, K; an extra sample is left out) as bytes.
    /// libtiff hands 16-bit samples over in this machine's byte order.
    static func cmyk8(_ row: UnsafeRawPointer, samplesPerPixel: Int, wide: Bool, width: Int, into cmyk: inout [UInt8]) {
        cmyk.withUnsafeMutableBufferPointer { out in
            if wide {
                let samples = row.assumingMemoryBound(to: UInt16.self)
                for x in 0..<width {
                    for channel in 0..<4 {
                        out[x * 4 + channel] = UInt8((UInt32(samples[x * samplesPerPixel + channel]) * 255 + 32_767) / 65_535)
                    }
                }
            } else {
                let samples = row.assumingMemoryBound(to: UInt8.self)
                for x in 0..<width {
                    for channel in 0..<4 { out[x * 4 + channel] = samples[x * samplesPerPixel + channel] }
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
