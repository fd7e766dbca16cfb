extension Thumbnailer {
    /// Frame-at-once formats: header → limits → the loader's reduced frame (the largest
    /// shrink-on-load every request still keeps its margin after) → block shrink → Lanczos.
    func renderFrame(_ loader: any FrameLoader, requests: [ThumbnailRequest],
                     isCancelled: CancellationCheck?, placeholder: PlaceholderSampler? = nil) throws(ImagingError) -> [DecodedThumbnail] {
        try limits.check(width: loader.storedWidth, height: loader.storedHeight)
        let (_, outputs) = plan(requests, storedWidth: loader.storedWidth, storedHeight: loader.storedHeight,
                                sourceOrientation: loader.orientation, allowsDCT: false)
        let maxShrink = outputs.map { max(1, $0.geometry.reduction / tuning.dctMargin) }.min() ?? 1
        let outputShrink = outputs.map { max(1, $0.geometry.reduction) }.min() ?? 1
        if isCancelled?() == true { throw .cancelled }
        let frame = try loader.load(maxShrink: maxShrink, outputShrink: max(maxShrink, outputShrink), isCancelled: isCancelled)
        if isCancelled?() == true { throw .cancelled }
        let pixels = frame.pixels
        guard pixels.width > 0, pixels.height > 0 else { throw .undecodable(reason: "the decoder returned no pixels") }
        let loadedX = frame.storedPixelsPerPixel?.x ?? Double(loader.storedWidth) / Double(pixels.width)
        let loadedY = frame.storedPixelsPerPixel?.y ?? Double(loader.storedHeight) / Double(pixels.height)
        let transform = try ColorProfileTransform.shared(frame.iccProfile, layout: pixels.channels == 4 ? .rgba : .rgb,
                                                         isCancelled: isCancelled)
        if let placeholder {
            placeholder.sample(pixels)
            placeholder.orientation = loader.orientation
            placeholder.colorTransform = transform
        }
        return outputs.map { output in
            let reductionLeft = output.geometry.reduction / max(loadedX, loadedY)
            let box = ShrinkPlan(reduction: reductionLeft, allowsDCT: false, tuning: tuning).boxFactor
            let shrinker = BoxShrinker(sourceWidth: pixels.width, sourceHeight: pixels.height, channels: pixels.channels, factor: box)
            pixels.bytes.withUnsafeBufferPointer { buffer in
                shrinker.consume(rows: buffer.baseAddress!, count: pixels.height, rowStride: pixels.rowBytes)
            }
            let (resampled, crop) = finish(shrinker.output, shrinkFactorX: loadedX * Double(box),
                                           shrinkFactorY: loadedY * Double(box), output: output)
            return DecodedThumbnail(pixels: resampled, storedWidth: loader.storedWidth, storedHeight: loader.storedHeight,
                                    orientation: output.orientation, colorTransform: transform, warning: frame.warning, crop: crop,
                                    attentionPlaced: output.attention != nil)
        }
    }
}
