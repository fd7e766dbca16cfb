/// Where a thumbnail comes from in the source and how big it is: pure arithmetic on sizes.
/// All values are pixels of the displayed (upright) image.
public struct ThumbnailGeometry: Sendable, Equatable {
    /// Output size, pixels.
    public var outputWidth: Int
    public var outputHeight: Int
    /// Source rectangle that maps onto the output (the whole image for `fit`, a centred
    /// crop for `fill`), in source pixels, possibly fractional.
    public var cropX: Double
    public var cropY: Double
    public var cropWidth: Double
    public var cropHeight: Double

    /// Sizes a source of `sourceWidth` × `sourceHeight` pixels for a slot of
    /// `slotWidth` × `slotHeight` pixels. No output side exceeds the slot's (a fill that keeps
    /// the slot's aspect ratio is at most the slot), so the arithmetic cannot leave the bounds
    /// the slot was checked against.
    public init(sourceWidth: Int, sourceHeight: Int, slotWidth: Int, slotHeight: Int,
                mode: SlotKind.ContentMode, upscale: Bool) {
        let sw = Double(sourceWidth), sh = Double(sourceHeight)
        let tw = Double(slotWidth), th = Double(slotHeight)
        switch mode {
        case .fit:
            var scale = min(tw / sw, th / sh)
            if !upscale { scale = min(scale, 1) }
            outputWidth = CheckedConversion.clampedInteger(sw * scale, to: 1...max(1, slotWidth))
            outputHeight = CheckedConversion.clampedInteger(sh * scale, to: 1...max(1, slotHeight))
            (cropX, cropY, cropWidth, cropHeight) = (0, 0, sw, sh)
        case .fill:
            var scale = max(tw / sw, th / sh)
            var width = tw, height = th
            if !upscale && scale > 1 {
                // Keep the slot's aspect ratio at the largest size the source covers.
                let shrink = min(sw / tw, sh / th)
                width = tw * shrink
                height = th * shrink
                scale = 1
            }
            outputWidth = CheckedConversion.clampedInteger(width, to: 1...max(1, slotWidth))
            outputHeight = CheckedConversion.clampedInteger(height, to: 1...max(1, slotHeight))
            cropWidth = min(sw, Double(outputWidth) / scale)
            cropHeight = min(sh, Double(outputHeight) / scale)
            cropX = (sw - cropWidth) / 2
            cropY = (sh - cropHeight) / 2
        }
    }

    /// The same geometry in the stored frame of an image that `orientation` turns upright.
    /// A centred crop stays centred under any flip, so only a transposition matters.
    func stored(for orientation: Orientation) -> ThumbnailGeometry {
        guard orientation.swapsDimensions else { return self }
        var copy = self
        (copy.outputWidth, copy.outputHeight) = (outputHeight, outputWidth)
        (copy.cropX, copy.cropY, copy.cropWidth, copy.cropHeight) = (cropY, cropX, cropHeight, cropWidth)
        return copy
    }
}
