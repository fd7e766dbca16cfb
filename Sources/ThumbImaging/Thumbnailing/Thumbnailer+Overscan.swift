/// An attention crop of a JPEG output that needs no block shrink keeps the row-streamed
/// Lanczos step: the resampler runs over the whole frame (along each axis the crop may move on)
/// at the output's scale, attention is placed on that small image, and the crop is cut from it
/// in whole output pixels. Holding the decoded frame in floats instead (to place the crop before
/// resampling) costs a third of the render of a 12-MP photo; this costs the Lanczos step's
/// overscan (a 4:3 source's square crop resamples 4/3 of the columns).
struct Overscan {
    /// The stored-frame geometry the crop is placed in.
    let geometry: ThumbnailGeometry
    /// Decoded (DCT-scaled) pixels a stored pixel.
    let shrink: Double
    /// Decoded pixels an output pixel, per axis.
    let stepX: Double
    let stepY: Double
    /// The resampled image's size, output pixels (at least the output's).
    let columns: Int
    let rows: Int

    init(_ geometry: ThumbnailGeometry, shrink: Double) {
        self.geometry = geometry
        self.shrink = shrink
        stepX = geometry.cropWidth / shrink / Double(max(1, geometry.outputWidth))
        stepY = geometry.cropHeight / shrink / Double(max(1, geometry.outputHeight))
        let movesX = geometry.cropWidth < geometry.sourceWidth, movesY = geometry.cropHeight < geometry.sourceHeight
        let limit = 1...SlotBounds.maxPixelsPerSide * 8
        columns = movesX ? max(geometry.outputWidth, CheckedConversion.clampedInteger(
            geometry.sourceWidth / shrink / stepX + 1e-9, rounding: .down, to: limit)) : geometry.outputWidth
        rows = movesY ? max(geometry.outputHeight, CheckedConversion.clampedInteger(
            geometry.sourceHeight / shrink / stepY + 1e-9, rounding: .down, to: limit)) : geometry.outputHeight
    }

    /// The decoded frame's part the resampler covers: from the origin along a free axis.
    var region: Lanczos3.Region {
        Lanczos3.Region(x: columns > geometry.outputWidth ? 0 : geometry.cropX / shrink,
                        y: rows > geometry.outputHeight ? 0 : geometry.cropY / shrink,
                        width: Double(columns) * stepX, height: Double(rows) * stepY)
    }

    /// Places the crop on the resampled image and cuts it out; returns the pixels and the crop,
    /// in the displayed source's pixels.
    func finish(_ resampled: FloatImage, coverage: MaskCoverage, orientation: Orientation) -> (pixels: PixelBuffer, crop: CropRectangle) {
        let storedPerColumn = stepX * shrink, storedPerRow = stepY * shrink
        let placed = Attention.place(geometry, on: resampled, shrinkFactorX: storedPerColumn, shrinkFactorY: storedPerRow,
                                     coverage: coverage)
        var used = geometry
        var firstColumn = 0, firstRow = 0
        if columns > geometry.outputWidth {
            firstColumn = CheckedConversion.clampedInteger(placed.cropX / storedPerColumn, to: 0...(columns - geometry.outputWidth))
            used.cropX = Double(firstColumn) * storedPerColumn
        }
        if rows > geometry.outputHeight {
            firstRow = CheckedConversion.clampedInteger(placed.cropY / storedPerRow, to: 0...(rows - geometry.outputHeight))
            used.cropY = Double(firstRow) * storedPerRow
        }
        var cut = FloatImage(width: geometry.outputWidth, height: geometry.outputHeight, hasAlpha: resampled.hasAlpha, zeroed: false)
        for row in 0..<geometry.outputHeight {
            let from = (firstRow + row) * resampled.width + firstColumn
            cut.pixels.replaceSubrange(row * cut.width..<(row + 1) * cut.width,
                                       with: resampled.pixels[from..<(from + cut.width)])
        }
        return (cut.pixelBuffer(), used.displayedCrop(for: orientation))
    }
}
