/// Where a thumbnail comes from in the source and how big it is: pure arithmetic on sizes.
/// All values are pixels of the displayed (upright) image, unless `stored(for:)` moved them.
package struct ThumbnailGeometry: Sendable, Equatable {
    /// Output size, pixels.
    package var outputWidth: Int
    package var outputHeight: Int
    /// Source rectangle that maps onto the output (the whole image for `fit`, a crop for `fill`,
    /// centred until `placed(centreX:centreY:)` moves it), in source pixels, possibly fractional.
    package var cropX: Double
    package var cropY: Double
    package var cropWidth: Double
    package var cropHeight: Double
    /// The source's size in the same frame as the crop, pixels.
    package var sourceWidth: Double
    package var sourceHeight: Double

    /// Sizes a source of `sourceWidth` × `sourceHeight` pixels for a slot of
    /// `slotWidth` × `slotHeight` pixels. No output side exceeds the slot's (a fill that keeps
    /// the slot's aspect ratio is at most the slot), so the arithmetic cannot leave the bounds
    /// the slot was checked against.
    package init(sourceWidth: Int, sourceHeight: Int, slotWidth: Int, slotHeight: Int,
                mode: SlotKind.ContentMode, upscale: Bool) {
        let sw = Double(sourceWidth), sh = Double(sourceHeight)
        let tw = Double(slotWidth), th = Double(slotHeight)
        self.sourceWidth = sw
        self.sourceHeight = sh
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

    /// Whether the crop can move along some axis (a `fill` of another aspect ratio).
    var hasFreedom: Bool { cropWidth < sourceWidth || cropHeight < sourceHeight }

    /// The same crop moved so its centre is as near (`centreX`, `centreY`) (source pixels) as
    /// the source allows: clamped so the crop stays inside it.
    package func placed(centreX: Double, centreY: Double) -> ThumbnailGeometry {
        var copy = self
        copy.cropX = Self.clamp(centreX - cropWidth / 2, to: sourceWidth - cropWidth)
        copy.cropY = Self.clamp(centreY - cropHeight / 2, to: sourceHeight - cropHeight)
        return copy
    }

    /// The crop placed on the focus (fractions of this frame's source).
    package func placed(on focus: FocusRegion) -> ThumbnailGeometry {
        placed(centreX: focus.centreX * sourceWidth, centreY: focus.centreY * sourceHeight)
    }

    /// `value` within 0...upper (0 when there is no room, or when it is not a number).
    static func clamp(_ value: Double, to upper: Double) -> Double {
        guard value.isFinite, upper > 0 else { return 0 }
        return min(max(value, 0), upper)
    }

    /// The crop as the displayed frame's rectangle (this geometry being in that frame).
    package var cropRectangle: CropRectangle {
        CropRectangle(x: cropX, y: cropY, width: cropWidth, height: cropHeight)
    }
}

extension ThumbnailGeometry {
    /// The same geometry in the stored frame of an image that `orientation` turns upright
    /// (this geometry being in the displayed frame). A crop that is not centred moves under a
    /// flip, so every orientation maps its corners.
    func stored(for orientation: Orientation) -> ThumbnailGeometry {
        var copy = self
        let rectangle = orientation.storedRectangle(of: cropRectangle, displayedWidth: sourceWidth,
                                                    displayedHeight: sourceHeight)
        (copy.cropX, copy.cropY, copy.cropWidth, copy.cropHeight) = (rectangle.x, rectangle.y, rectangle.width, rectangle.height)
        if orientation.swapsDimensions {
            (copy.outputWidth, copy.outputHeight) = (outputHeight, outputWidth)
            (copy.sourceWidth, copy.sourceHeight) = (sourceHeight, sourceWidth)
        }
        return copy
    }

    /// The crop of this stored-frame geometry in the displayed frame.
    func displayedCrop(for orientation: Orientation) -> CropRectangle {
        orientation.displayedRectangle(of: cropRectangle, storedWidth: sourceWidth, storedHeight: sourceHeight)
    }
}

extension Orientation {
    /// The stored-frame rectangle shown as `rectangle` of the displayed image (continuous
    /// coordinates: a pixel is the unit square at its index).
    func storedRectangle(of rectangle: CropRectangle, displayedWidth w: Double, displayedHeight h: Double) -> CropRectangle {
        let r = rectangle
        return switch self {
        case .up: r
        case .upMirrored: CropRectangle(x: w - r.x - r.width, y: r.y, width: r.width, height: r.height)
        case .down: CropRectangle(x: w - r.x - r.width, y: h - r.y - r.height, width: r.width, height: r.height)
        case .downMirrored: CropRectangle(x: r.x, y: h - r.y - r.height, width: r.width, height: r.height)
        case .leftMirrored: CropRectangle(x: r.y, y: r.x, width: r.height, height: r.width)
        case .right: CropRectangle(x: r.y, y: w - r.x - r.width, width: r.height, height: r.width)
        case .rightMirrored: CropRectangle(x: h - r.y - r.height, y: w - r.x - r.width, width: r.height, height: r.width)
        case .left: CropRectangle(x: h - r.y - r.height, y: r.x, width: r.height, height: r.width)
        }
    }

    /// The inverse of `storedRectangle`: where a stored-frame rectangle shows in the displayed image.
    func displayedRectangle(of rectangle: CropRectangle, storedWidth w: Double, storedHeight h: Double) -> CropRectangle {
        let r = rectangle
        return switch self {
        case .up: r
        case .upMirrored: CropRectangle(x: w - r.x - r.width, y: r.y, width: r.width, height: r.height)
        case .down: CropRectangle(x: w - r.x - r.width, y: h - r.y - r.height, width: r.width, height: r.height)
        case .downMirrored: CropRectangle(x: r.x, y: h - r.y - r.height, width: r.width, height: r.height)
        case .leftMirrored: CropRectangle(x: r.y, y: r.x, width: r.height, height: r.width)
        case .right: CropRectangle(x: h - r.y - r.height, y: r.x, width: r.height, height: r.width)
        case .rightMirrored: CropRectangle(x: h - r.y - r.height, y: w - r.x - r.width, width: r.height, height: r.width)
        case .left: CropRectangle(x: r.y, y: w - r.x - r.width, width: r.height, height: r.width)
        }
    }
}
