extension Thumbnailer {
    /// Rows read per batch (a cancellation check between batches).
    static let batchRows = 16

    /// The one render loop, for every format (`RowSource`): header → limits → plan → the
    /// shrink-on-load hint → one sink per output (the block shrink, or rows straight into Lanczos,
    /// or the frame an attention crop is placed on) and the placeholder's → rows in batches →
    /// colour → Lanczos (`finish`). Holds the decoded frame only for an attention crop with no
    /// block to shrink (one frame for all such outputs, within `maxDecoderMemoryBytes`; past it
    /// the crop is centred). `cropsColumns` false decodes every column (the tests' reference).
    func renderRows(_ source: any RowSource, requests: [ThumbnailRequest], isCancelled: CancellationCheck?,
                    cropsColumns: Bool = true, placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        try limits.check(width: source.storedWidth, height: source.storedHeight)
        let (denominator, planned) = plan(requests, storedWidth: source.storedWidth, storedHeight: source.storedHeight,
                                          sourceOrientation: source.orientation, allowsDCT: source.shrinkOnLoad == .dctScale)
        var hint = LoadHint(dctDenominator: denominator)
        if source.shrinkOnLoad == .frame {
            hint.maxShrink = planned.map { max(1, $0.geometry.reduction / tuning.dctMargin) }.min() ?? 1
            hint.outputShrink = max(hint.maxShrink, planned.map { max(1, $0.geometry.reduction) }.min() ?? 1)
        }
        if isCancelled?() == true { throw .cancelled }
        let scaled = try source.start(hint)
        let loaded = max(scaled.storedPixelsPerPixelX, scaled.storedPixelsPerPixelY)
        let outputs = planned.map { output in
            var output = output
            output.boxFactor = ShrinkPlan(reduction: output.geometry.reduction / loaded, allowsDCT: false, tuning: tuning).boxFactor
            return output
        }
        // Decoded dimensions are bounded by `limits.check` above: no overflow.
        let frameFits = scaled.width * scaled.height * FrameRows.channels <= limits.maxDecoderMemoryBytes
        var frame: FrameRows?
        let sinks = outputs.map { output -> RowSink in
            guard source.streamsRowsIntoLanczos, output.boxFactor == 1 else {
                return .shrink(BoxShrinker(sourceWidth: scaled.width, sourceHeight: scaled.height, channels: scaled.channels,
                                           factor: output.boxFactor))
            }
            if output.attention != nil, frameFits, scaled.channels == FrameRows.channels {
                let shared = frame ?? FrameRows(width: scaled.width, height: scaled.height)
                frame = shared
                return .frame(shared)
            }
            return .resample(RowResampler(sourceWidth: scaled.width, sourceHeight: scaled.height,
                                          region: Lanczos3.Region(output.geometry, shrinkFactorX: scaled.storedPixelsPerPixelX,
                                                                  shrinkFactorY: scaled.storedPixelsPerPixelY),
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
        let fed = outputSinks
            + (sampler.map { [.shrink($0.start(width: scaled.width, height: scaled.height, channels: scaled.channels))] } ?? [])
        let columns = if let wanted, sampler == nil {
            try Self.cropColumns(source, wanted, width: scaled.width, sinks: fed)
        } else {
            0..<scaled.width
        }
        let rowStride = columns.count * scaled.channels
        var rows = [UInt8](repeating: 0, count: rowStride * Self.batchRows)
        // Rows of a frame kept whole are read into it; the other sinks read them back.
        let direct = fed.lazy.compactMap(\.frame).first
        let others = fed.filter { $0.frame == nil || $0.frame !== direct }
        while true {
            if isCancelled?() == true { throw .cancelled }
            if let direct {
                let first = direct.rowsConsumed
                let count = try direct.appendRows(maxRows: Self.batchRows) { (destination, room) throws(ImagingError) -> Int in
                    try source.readRows(into: destination, rowStride: rowStride, maxRows: room)
                }
                if count == 0 { break }
                direct.withRows(first..<(first + count)) { rows in
                    for sink in others { sink.consume(rows: rows, count: count, rowStride: rowStride) }
                }
                continue
            }
            let count = try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                try source.readRows(into: buffer.baseAddress!, rowStride: rowStride, maxRows: Self.batchRows)
            }
            if count == 0 { break }
            rows.withUnsafeBufferPointer { buffer in
                for sink in fed { sink.consume(rows: buffer.baseAddress!, count: count, rowStride: rowStride) }
            }
        }
        guard fed.allSatisfy(\.isComplete) else { throw .undecodable(reason: "decoder stopped before the last row") }
        if isCancelled?() == true { throw .cancelled }
        let warning = source.warning
        let transform = try source.colourTransform()
        placeholder?.orientation = source.orientation
        placeholder?.colorTransform = transform
        return zip(outputs, sinks).map { output, sink in
            let box = Double(output.boxFactor)
            let (shrinkX, shrinkY) = (scaled.storedPixelsPerPixelX * box, scaled.storedPixelsPerPixelY * box)
            let (pixels, crop) = switch sink {
            case let .shrink(shrinker): finish(shrinker.output, shrinkFactorX: shrinkX, shrinkFactorY: shrinkY, output: output)
            case let .resample(resampler):
                // An attention output here had its frame over the memory limit: it keeps the centred crop.
                (resampler.finish().pixelBuffer(), output.geometry.displayedCrop(for: output.orientation))
            case let .frame(frame):
                finish(frame, shrink: shrinkX, output: output)
            }
            var notes = warning.map { [$0] } ?? []
            var attentionPlaced = output.attention != nil
            if output.attention != nil, case .resample = sink {
                attentionPlaced = false
                notes.append("attention crop skipped: the decoded frame \(scaled.width)x\(scaled.height) is over the "
                             + "\(limits.maxDecoderMemoryBytes)-byte decoder memory limit; cropped at the centre")
            }
            return DecodedThumbnail(pixels: pixels, storedWidth: source.storedWidth, storedHeight: source.storedHeight,
                                    orientation: output.orientation, colorTransform: transform,
                                    warning: notes.isEmpty ? nil : notes.joined(separator: "; "),
                                    skippedScanBytes: source.skippedScanBytes, crop: crop, attentionPlaced: attentionPlaced)
        }
    }

    /// JPEG through the loop. `selectsScans` false decodes every scan of a progressive file,
    /// `cropsColumns` false every column (the tests' references).
    func renderJPEG(_ source: SourceBytes, requests: [ThumbnailRequest], isCancelled: CancellationCheck?,
                    selectsScans: Bool = true, cropsColumns: Bool = true,
                    placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        let rows = try JPEGRowSource(source, limits: limits, isCancelled: isCancelled, selectsScans: selectsScans)
        return try renderRows(rows, requests: requests, isCancelled: isCancelled, cropsColumns: cropsColumns, placeholder: placeholder)
    }

    /// A frame-at-once loader through the loop.
    func renderFrame(_ loader: any FrameLoader, requests: [ThumbnailRequest],
                     isCancelled: CancellationCheck?, placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        try renderRows(FrameRowSource(loader, isCancelled: isCancelled), requests: requests, isCancelled: isCancelled,
                       placeholder: placeholder)
    }
}
