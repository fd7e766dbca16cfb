extension Thumbnailer {
    /// JPEG: header → limits → DCT scale chosen from the geometry → rows in batches into the
    /// block shrinker → Lanczos. Never holds the full-resolution frame unless no reduction is possible.
    /// `selectsScans` false decodes every scan of a progressive file (the tests' reference).
    func renderJPEG(_ source: SourceBytes, requests: [ThumbnailRequest], isCancelled: CancellationCheck?,
                    selectsScans: Bool = true) throws(ImagingError) -> [DecodedThumbnail] {
        let decoder = try JPEGDecoder(source: source, limits: limits, isCancelled: isCancelled, selectsScans: selectsScans)
        try limits.check(width: decoder.storedWidth, height: decoder.storedHeight)
        let (denominator, outputs) = plan(requests, storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                                          sourceOrientation: decoder.orientation, allowsDCT: true)
        let profile = decoder.iccProfile()
        let inverted = decoder.header.sawAdobeMarker != 0
        let cmykTransform = decoder.isCMYK
            ? profile.flatMap { ColorProfileTransform.shared(profile: $0, layout: inverted ? .cmykInverted : .cmyk) }
            : nil

        let scaled = try decoder.start(scaleDenominator: denominator)
        let shrinkers = outputs.map { BoxShrinker(sourceWidth: scaled.width, sourceHeight: scaled.height, channels: 3, factor: $0.boxFactor) }
        let batchRows = 16
        let rowStride = scaled.width * scaled.components
        var rows = [UInt8](repeating: 0, count: rowStride * batchRows)
        var rgbRows = [UInt8](repeating: 0, count: decoder.isCMYK ? scaled.width * 3 * batchRows : 0)
        while true {
            if isCancelled?() == true { throw .cancelled }
            let count = try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                try decoder.readRows(into: buffer.baseAddress!, rowStride: rowStride, maxRows: batchRows)
            }
            if count == 0 { break }
            if decoder.isCMYK {
                rows.withUnsafeBufferPointer { cmyk in
                    rgbRows.withUnsafeMutableBufferPointer { rgb in
                        let pixels = scaled.width * count
                        if let cmykTransform {
                            cmykTransform.apply(input: cmyk.baseAddress!, output: rgb.baseAddress!, pixelCount: pixels)
                        } else {
                            CMYKConversion.naive(cmyk.baseAddress!, into: rgb.baseAddress!, pixelCount: pixels, inverted: inverted)
                        }
                        for shrinker in shrinkers { shrinker.consume(rows: rgb.baseAddress!, count: count, rowStride: scaled.width * 3) }
                    }
                }
            } else {
                rows.withUnsafeBufferPointer { buffer in
                    for shrinker in shrinkers { shrinker.consume(rows: buffer.baseAddress!, count: count, rowStride: rowStride) }
                }
            }
        }
        guard shrinkers.allSatisfy(\.isComplete) else { throw .undecodable(reason: "decoder stopped before the last row") }
        if isCancelled?() == true { throw .cancelled }
        let warning = decoder.warning
        return zip(outputs, shrinkers).map { output, shrinker in
            let pixels = finish(shrinker.output, shrinkFactor: Double(denominator * output.boxFactor), geometry: output.geometry)
            let rgbTransform = decoder.isCMYK ? nil : profile.flatMap { ColorProfileTransform.shared(profile: $0, layout: .rgb) }
            return DecodedThumbnail(pixels: pixels, storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                                    orientation: output.orientation, colorTransform: rgbTransform, warning: warning,
                                    skippedScanBytes: decoder.skippedScanBytes)
        }
    }
}

/// CMYK to RGB without a profile, as Pillow and most viewers do it: (1 − C)(1 − K).
enum CMYKConversion {
    /// `inverted`: Adobe's APP14 files store 255 − ink.
    static func naive(_ cmyk: UnsafePointer<UInt8>, into rgb: UnsafeMutablePointer<UInt8>, pixelCount: Int, inverted: Bool) {
        for pixel in 0..<pixelCount {
            let at = pixel * 4
            var c = UInt32(cmyk[at]), m = UInt32(cmyk[at + 1]), y = UInt32(cmyk[at + 2]), k = UInt32(cmyk[at + 3])
            if !inverted { (c, m, y, k) = (255 - c, 255 - m, 255 - y, 255 - k) }
            rgb[pixel * 3] = UInt8((c * k + 127) / 255)
            rgb[pixel * 3 + 1] = UInt8((m * k + 127) / 255)
            rgb[pixel * 3 + 2] = UInt8((y * k + 127) / 255)
        }
    }
}

extension ThumbnailGeometry {
    /// Source pixels per output pixel along the less reduced axis (below 1 when enlarging).
    var reduction: Double {
        min(cropWidth / Double(outputWidth), cropHeight / Double(outputHeight))
    }
}
