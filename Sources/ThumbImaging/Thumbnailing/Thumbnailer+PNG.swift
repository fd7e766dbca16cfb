extension Thumbnailer {
    /// PNG: info → limits → rows streamed into the block shrinkers (Adam7 images are read
    /// whole, since their passes fill the frame out of order, in slices of row reads with a
    /// cancellation check between them) → Lanczos.
    func renderPNG(_ source: SourceBytes, requests: [ThumbnailRequest],
                   isCancelled: CancellationCheck?, placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        let decoder = try PNGDecoder(source: source, limits: limits)
        try limits.check(width: decoder.width, height: decoder.height)
        let (_, outputs) = plan(requests, storedWidth: decoder.width, storedHeight: decoder.height,
                                sourceOrientation: .up, allowsDCT: false)
        let profile = decoder.iccProfile
        // An ICC profile describes the transfer curve itself; gAMA is then ignored (PNG spec 11.3.3.3).
        let layout = try decoder.start(applyGamma: profile == nil)
        let shrinkers = outputs.map {
            BoxShrinker(sourceWidth: decoder.width, sourceHeight: decoder.height, channels: layout.channels, factor: $0.boxFactor)
        } + (placeholder.map { [$0.start(width: decoder.width, height: decoder.height, channels: layout.channels)] } ?? [])
        let rowStride = decoder.width * layout.channels
        let batchRows = 16
        if layout.passes > 1 {
            if isCancelled?() == true { throw .cancelled }
            var image = [UInt8](repeating: 0, count: rowStride * decoder.height)
            // Passes × height cannot overflow: passes is 7 and height fits in 32 bits.
            var remaining = layout.passes * decoder.height
            while remaining > 0 {
                let count = min(batchRows, remaining)
                try image.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                    try decoder.readInterlacedRows(into: buffer.baseAddress!, rowStride: rowStride, count: count)
                }
                remaining -= count
                if remaining > 0, isCancelled?() == true { throw .cancelled }
            }
            image.withUnsafeBufferPointer { buffer in
                for shrinker in shrinkers { shrinker.consume(rows: buffer.baseAddress!, count: decoder.height, rowStride: rowStride) }
            }
        } else {
            var rows = [UInt8](repeating: 0, count: rowStride * batchRows)
            var remaining = decoder.height
            while remaining > 0 {
                if isCancelled?() == true { throw .cancelled }
                let count = min(batchRows, remaining)
                try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                    try decoder.readRows(into: buffer.baseAddress!, rowStride: rowStride, count: count)
                }
                rows.withUnsafeBufferPointer { buffer in
                    for shrinker in shrinkers { shrinker.consume(rows: buffer.baseAddress!, count: count, rowStride: rowStride) }
                }
                remaining -= count
            }
        }
        if isCancelled?() == true { throw .cancelled }
        let warning = decoder.warning
        let transform = try ColorProfileTransform.shared(profile, layout: layout.channels == 4 ? .rgba : .rgb, isCancelled: isCancelled)
        placeholder?.colorTransform = transform
        return zip(outputs, shrinkers).map { output, shrinker in
            let box = Double(output.boxFactor)
            let (pixels, crop) = finish(shrinker.output, shrinkFactorX: box, shrinkFactorY: box, output: output)
            return DecodedThumbnail(pixels: pixels, storedWidth: decoder.width, storedHeight: decoder.height,
                                    orientation: .up, colorTransform: transform, warning: warning, crop: crop,
                                    attentionPlaced: output.attention != nil)
        }
    }
}
