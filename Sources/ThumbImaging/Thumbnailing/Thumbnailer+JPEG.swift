extension Thumbnailer {
    /// JPEG: header → limits → DCT scale chosen from the geometry → rows in batches into the
    /// block shrinker → Lanczos (or, with no block to shrink, rows straight into Lanczos). Holds
    /// the DCT-scaled frame only for an attention crop with no block to shrink (as bytes, one
    /// frame for all such outputs, within `maxDecoderMemoryBytes`; past it the crop is centred).
    /// `selectsScans` false decodes every scan of a progressive file, `cropsColumns` false every
    /// column (the tests' references).
    func renderJPEG(_ source: SourceBytes, requests: [ThumbnailRequest], isCancelled: CancellationCheck?,
                    selectsScans: Bool = true, cropsColumns: Bool = true,
                    placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        let decoder = try JPEGDecoder(source: source, limits: limits, isCancelled: isCancelled, selectsScans: selectsScans)
        try limits.check(width: decoder.storedWidth, height: decoder.storedHeight)
        let (denominator, outputs) = plan(requests, storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                                          sourceOrientation: decoder.orientation, allowsDCT: true)
        let profile = decoder.iccProfile()
        let inverted = decoder.header.sawAdobeMarker != 0
        let cmykTransform = decoder.isCMYK
            ? try ColorProfileTransform.shared(profile, layout: inverted ? .cmykInverted : .cmyk, isCancelled: isCancelled)
            : nil

        let scaled = try decoder.start(scaleDenominator: denominator)
        // Decoded dimensions are bounded by `limits.check` above: no overflow.
        let frameFits = scaled.width * scaled.height * FrameRows.channels <= limits.maxDecoderMemoryBytes
        var frame: FrameRows?
        let sinks = outputs.map { output -> JPEGRowSink in
            guard output.boxFactor == 1 else {
                return .shrink(BoxShrinker(sourceWidth: scaled.width, sourceHeight: scaled.height, channels: 3, factor: output.boxFactor))
            }
            let shrink = Double(denominator)
            if output.attention != nil, frameFits {
                let shared = frame ?? FrameRows(width: scaled.width, height: scaled.height)
                frame = shared
                return .frame(shared)
            }
            return .resample(RowResampler(sourceWidth: scaled.width, sourceHeight: scaled.height,
                                          region: Lanczos3.Region(output.geometry, shrinkFactorX: shrink, shrinkFactorY: shrink),
                                          outputWidth: output.geometry.outputWidth, outputHeight: output.geometry.outputHeight))
        }
        // Each sink fed once (outputs share the frame).
        let outputSinks = sinks.enumerated().filter { index, sink in
            sink.frame == nil || !sinks[..<index].contains { $0.frame === sink.frame }
        }.map(\.element)
        let wanted = cropsColumns ? Self.columnsToDecode(width: scaled.width, sinks: outputSinks) : nil
        // The placeholder's shrink needs the whole frame, so it turns column cropping off; one
        // wanted only from a whole frame is left unfed instead.
        let sampler = wanted != nil && placeholder?.onlyIfWholeFrame == true ? nil : placeholder
        let fed = outputSinks + (sampler.map { [.shrink($0.start(width: scaled.width, height: scaled.height, channels: 3))] } ?? [])
        let columns = if let wanted, sampler == nil {
            try Self.cropColumns(decoder, wanted, width: scaled.width, sinks: fed)
        } else {
            0..<scaled.width
        }
        let batchRows = 16
        let rowWidth = columns.count
        let rowStride = rowWidth * scaled.components
        var rows = [UInt8](repeating: 0, count: rowStride * batchRows)
        var rgbRows = [UInt8](repeating: 0, count: decoder.isCMYK ? rowWidth * 3 * batchRows : 0)
        // An RGB decode that keeps a whole frame writes its rows there; the other sinks read them back.
        let direct = scaled.components == FrameRows.channels ? fed.lazy.compactMap(\.frame).first : nil
        let others = fed.filter { $0.frame == nil || $0.frame !== direct }
        while true {
            if isCancelled?() == true { throw .cancelled }
            if let direct {
                let first = direct.rowsConsumed
                let count = try direct.appendRows(maxRows: batchRows) { (destination, room) throws(ImagingError) -> Int in
                    try decoder.readRows(into: destination, rowStride: rowStride, maxRows: room)
                }
                if count == 0 { break }
                direct.withRows(first..<(first + count)) { rows in
                    for sink in others { sink.consume(rows: rows, count: count, rowStride: rowStride) }
                }
                continue
            }
            let count = try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                try decoder.readRows(into: buffer.baseAddress!, rowStride: rowStride, maxRows: batchRows)
            }
            if count == 0 { break }
            if decoder.isCMYK {
                rows.withUnsafeBufferPointer { cmyk in
                    rgbRows.withUnsafeMutableBufferPointer { rgb in
                        let pixels = rowWidth * count
                        if let cmykTransform {
                            cmykTransform.apply(input: cmyk.baseAddress!, output: rgb.baseAddress!, pixelCount: pixels)
                        } else {
                            CMYKConversion.naive(cmyk.baseAddress!, into: rgb.baseAddress!, pixelCount: pixels, inverted: inverted)
                        }
                        for sink in fed { sink.consume(rows: rgb.baseAddress!, count: count, rowStride: rowWidth * 3) }
                    }
                }
            } else {
                rows.withUnsafeBufferPointer { buffer in
                    for sink in fed { sink.consume(rows: buffer.baseAddress!, count: count, rowStride: rowStride) }
                }
            }
        }
        guard fed.allSatisfy(\.isComplete) else { throw .undecodable(reason: "decoder stopped before the last row") }
        if isCancelled?() == true { throw .cancelled }
        let warning = decoder.warning
        placeholder?.orientation = decoder.orientation
        let rgbTransform = decoder.isCMYK ? nil : try ColorProfileTransform.shared(profile, layout: .rgb, isCancelled: isCancelled)
        placeholder?.colorTransform = rgbTransform
        return zip(outputs, sinks).map { output, sink in
            let shrink = Double(denominator * output.boxFactor)
            let (pixels, crop) = switch sink {
            case let .shrink(shrinker): finish(shrinker.output, shrinkFactorX: shrink, shrinkFactorY: shrink, output: output)
            case let .resample(resampler):
                // An attention output here had its frame over the memory limit: it keeps the centred crop.
                (resampler.finish().pixelBuffer(), output.geometry.displayedCrop(for: output.orientation))
            case let .frame(frame):
                finish(frame, shrink: shrink, output: output)
            }
            var notes = warning.map { [$0] } ?? []
            var attentionPlaced = output.attention != nil
            if output.attention != nil, case .resample = sink {
                attentionPlaced = false
                notes.append("attention crop skipped: the decoded frame \(scaled.width)x\(scaled.height) is over the "
                             + "\(limits.maxDecoderMemoryBytes)-byte decoder memory limit; cropped at the centre")
            }
            return DecodedThumbnail(pixels: pixels, storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                                    orientation: output.orientation, colorTransform: rgbTransform,
                                    warning: notes.isEmpty ? nil : notes.joined(separator: "; "),
                                    skippedScanBytes: decoder.skippedScanBytes, crop: crop, attentionPlaced: attentionPlaced)
        }
    }
}

extension Thumbnailer {
    /// Columns kept clear of libjpeg's cut on each side: it crops whole iMCU columns, and an
    /// upsampled component's edge sample is replicated at the cut, unlike inside the frame.
    static let cropMarginPixels = 16

    /// When every output reads its rows straight into Lanczos and their taps leave a good part of
    /// the width unread (a fill crop of a wider frame: a square avatar of a 4:3 photo skips a
    /// quarter), the columns worth decoding; nil when the whole width is.
    static func columnsToDecode(width: Int, sinks: [JPEGRowSink]) -> Range<Int>? {
        var resamplers: [RowResampler] = []
        for sink in sinks {
            guard case let .resample(resampler) = sink else { return nil }
            resamplers.append(resampler)
        }
        guard let low = resamplers.map(\.columnsRead.lowerBound).min(),
              let high = resamplers.map(\.columnsRead.upperBound).max(), low < high else { return nil }
        let wanted = max(0, low - cropMarginPixels)..<min(width, high + cropMarginPixels)
        return wanted.count * 8 <= width * 7 ? wanted : nil // less than an eighth to skip
    }

    /// Tells the decoder to skip the IDCT, upsampling and colour conversion of the columns
    /// outside `wanted` (`sinks` are all resamplers: `columnsToDecode`). Returns the columns
    /// each row will hold.
    static func cropColumns(_ decoder: JPEGDecoder, _ wanted: Range<Int>, width: Int,
                            sinks: [JPEGRowSink]) throws(ImagingError) -> Range<Int> {
        let columns = try decoder.cropColumns(wanted)
        guard columns.lowerBound <= wanted.lowerBound, columns.upperBound >= wanted.upperBound,
              columns.upperBound <= width else {
            throw .undecodable(reason: "libjpeg cropped \(columns) for columns \(wanted) of \(width)")
        }
        for case let .resample(resampler) in sinks { resampler.receive(columns: columns) }
        return columns
    }
}

/// Where one output's decoded rows go: the block shrink (Lanczos then runs on its result) or,
/// with no block to shrink, the Lanczos step itself, row by row (`RowResampler`).
enum JPEGRowSink {
    case shrink(BoxShrinker)
    case resample(RowResampler)
    /// Kept whole until an attention crop is placed on it (Lanczos then reads the crop's columns).
    case frame(FrameRows)

    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride: Int) {
        switch self {
        case let .shrink(shrinker): shrinker.consume(rows: rows, count: count, rowStride: rowStride)
        case let .resample(resampler): resampler.consume(rows: rows, count: count, rowStride: rowStride)
        case let .frame(frame): frame.consume(rows: rows, count: count, rowStride: rowStride)
        }
    }

    var frame: FrameRows? {
        if case let .frame(frame) = self { frame } else { nil }
    }

    var isComplete: Bool {
        switch self {
        case let .shrink(shrinker): shrinker.isComplete
        case let .resample(resampler): resampler.isComplete
        case let .frame(frame): frame.isComplete
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
