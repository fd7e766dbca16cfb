extension Thumbnailer {
    /// Where a request's crop goes before anything is decoded: centred, or on the asset's focus
    /// (placed in the displayed frame, then mapped to the stored one), or where attention placed
    /// it on an earlier decode (`placedCentre`); an attention crop is otherwise only marked here
    /// and placed by `finish(_:output:)` on the shrunk frame.
    func cropPlan(_ request: ThumbnailRequest, storedWidth: Int, storedHeight: Int, orientation: Orientation) -> OutputPlan {
        let kind = request.kind
        let shown = orientation.displayedSize(width: storedWidth, height: storedHeight)
        let slot = kind.pixelSize(scale: request.scale)
        var displayed = ThumbnailGeometry(sourceWidth: shown.width, sourceHeight: shown.height, slotWidth: slot.width,
                                          slotHeight: slot.height, mode: kind.mode, upscale: kind.upscale)
        var attention: MaskCoverage?
        if kind.mode == .fill, displayed.hasFreedom {
            switch (kind.crop, request.focus) {
            case (.centre, _):
                break
            case let (.focus, focus?):
                displayed = displayed.placed(on: focus)
            case (.attention, _), (.focus, nil):
                if let placed = request.placedCentre {
                    displayed = displayed.placed(on: placed)
                    break
                }
                // The same pixels per point as `Mask.apply` gets for this output in `renderAll`.
                let filled = max(Double(displayed.outputWidth) / Double(slot.width),
                                 Double(displayed.outputHeight) / Double(slot.height))
                let swaps = orientation.swapsDimensions
                attention = MaskCoverage(mask: kind.mask,
                                         widthPixels: Double(swaps ? displayed.outputHeight : displayed.outputWidth),
                                         heightPixels: Double(swaps ? displayed.outputWidth : displayed.outputHeight),
                                         pixelsPerPoint: Double(request.scale) * min(1, filled))
            }
        }
        return OutputPlan(geometry: displayed.stored(for: orientation), orientation: orientation, boxFactor: 1,
                          attention: attention)
    }

    /// Last step, shared by every decoder: an attention crop placed on the shrunk frame, then
    /// Lanczos from that frame's crop to the output size. Returns the pixels and the crop used,
    /// in the displayed source's pixels.
    func finish(_ shrunk: FloatImage, shrinkFactorX: Double, shrinkFactorY: Double,
                output: OutputPlan) -> (pixels: PixelBuffer, crop: CropRectangle) {
        var geometry = output.geometry
        if let coverage = output.attention {
            geometry = Attention.place(geometry, on: shrunk, shrinkFactorX: shrinkFactorX, shrinkFactorY: shrinkFactorY,
                                       coverage: coverage)
        }
        let pixels = finish(shrunk, shrinkFactorX: shrinkFactorX, shrinkFactorY: shrinkFactorY, geometry: geometry)
        return (pixels, geometry.displayedCrop(for: output.orientation))
    }

    /// The same for a JPEG frame held as bytes (`JPEGRowSink.frame`), decoded at 1/`shrink`:
    /// the crop is placed, then only its columns go through the row-streamed Lanczos step.
    func finish(_ frame: FrameRows, shrink: Double, output: OutputPlan) -> (pixels: PixelBuffer, crop: CropRectangle) {
        var geometry = output.geometry
        if let coverage = output.attention {
            geometry = Attention.place(geometry, on: frame, shrinkFactorX: shrink, shrinkFactorY: shrink, coverage: coverage)
        }
        let resampler = RowResampler(sourceWidth: frame.width, sourceHeight: frame.height,
                                     region: Lanczos3.Region(geometry, shrinkFactorX: shrink, shrinkFactorY: shrink),
                                     outputWidth: geometry.outputWidth, outputHeight: geometry.outputHeight)
        return (frame.resample(resampler).pixelBuffer(), geometry.displayedCrop(for: output.orientation))
    }
}
