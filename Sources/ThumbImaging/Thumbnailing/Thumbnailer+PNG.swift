extension Thumbnailer {
    /// PNG: info → limits → rows streamed into the block shrinker (Adam7 images are read
    /// whole, since their passes fill the frame out of order) → Lanczos.
    func renderPNG(_ source: SourceBytes, slot: (width: Int, height: Int), request: ThumbnailRequest,
                   isCancelled: CancellationCheck?) throws(ImagingError) -> DecodedThumbnail {
        let decoder = try PNGDecoder(source: source, limits: limits)
        try limits.check(width: decoder.width, height: decoder.height)
        let geometry = storedGeometry(storedWidth: decoder.width, storedHeight: decoder.height,
                                      orientation: .up, slot: slot, kind: request.kind)
        let plan = ShrinkPlan(reduction: geometry.reduction, allowsDCT: false, tuning: tuning)
        let profile = decoder.iccProfile
        // An ICC profile describes the transfer curve itself; gAMA is then ignored (PNG spec 11.3.3.3).
        let layout = try decoder.start(applyGamma: profile == nil)
        let shrinker = BoxShrinker(sourceWidth: decoder.width, sourceHeight: decoder.height,
                                   channels: layout.channels, factor: plan.boxFactor)
        let rowStride = decoder.width * layout.channels
        if layout.interlaced {
            if isCancelled?() == true { throw .cancelled }
            var image = [UInt8](repeating: 0, count: rowStride * decoder.height)
            try image.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                try decoder.readImage(into: buffer.baseAddress!, rowStride: rowStride)
            }
            image.withUnsafeBufferPointer { shrinker.consume(rows: $0.baseAddress!, count: decoder.height, rowStride: rowStride) }
        } else {
            let batchRows = 16
            var rows = [UInt8](repeating: 0, count: rowStride * batchRows)
            var remaining = decoder.height
            while remaining > 0 {
                if isCancelled?() == true { throw .cancelled }
                let count = min(batchRows, remaining)
                try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) in
                    try decoder.readRows(into: buffer.baseAddress!, rowStride: rowStride, count: count)
                }
                rows.withUnsafeBufferPointer { shrinker.consume(rows: $0.baseAddress!, count: count, rowStride: rowStride) }
                remaining -= count
            }
        }
        if isCancelled?() == true { throw .cancelled }
        let pixels = finish(shrinker.output, shrinkFactor: Double(plan.boxFactor), geometry: geometry)
        let transform = profile.flatMap { ColorProfileTransform(profile: $0, layout: layout.channels == 4 ? .rgba : .rgb) }
        return DecodedThumbnail(pixels: pixels, storedWidth: decoder.width, storedHeight: decoder.height,
                                orientation: .up, colorTransform: transform, warning: decoder.warning)
    }
}
