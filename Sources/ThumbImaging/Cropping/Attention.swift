/// Places a `fill` crop where the image's salient part is. It reads the frame the resampler
/// already has (the decode's DCT-scaled, block-shrunk image, a few times the output's size),
/// scores it on a coarse grid (`AttentionMap`), and slides the crop's window over the grid
/// along each axis it may move on, weighting each cell by how much of it the kind's mask keeps.
enum Attention {
    /// Cells across the crop's shorter side: a placement step of about 1/40 of the crop (under
    /// 4 px of a 144-px avatar) is finer than the eye notices, and the grid stays small.
    static let cellsAcrossCrop = 40.0
    /// No grid side over this many cells, whatever the frame's aspect ratio (bounds the search).
    static let maxCellsPerSide = 400
    /// How much less a cell at the window's corner counts than one at its centre: among windows
    /// that keep a subject whole, the one that centres it wins (a plateau of equal sums would
    /// otherwise leave the subject against the mask's edge, or let noise pick the end).
    static let centreBias = 0.15

    /// `geometry` (stored frame) with its crop moved onto the salient region of `shrunk`, the
    /// stored frame reduced by `shrinkFactorX` × `shrinkFactorY`. A crop with no freedom, or
    /// an image with nothing to prefer, keeps the crop it came with.
    static func place(_ geometry: ThumbnailGeometry, on shrunk: FloatImage, shrinkFactorX: Double, shrinkFactorY: Double,
                      coverage: MaskCoverage) -> ThumbnailGeometry {
        guard geometry.hasFreedom, shrunk.width > 0, shrunk.height > 0,
              shrinkFactorX.isFinite, shrinkFactorY.isFinite, shrinkFactorX > 0, shrinkFactorY > 0 else { return geometry }
        let cropWidth = geometry.cropWidth / shrinkFactorX, cropHeight = geometry.cropHeight / shrinkFactorY
        let byCrop = CheckedConversion.clampedInteger(min(cropWidth, cropHeight) / cellsAcrossCrop, rounding: .down,
                                                      to: 1...Int(Int32.max))
        let byFrame = (max(shrunk.width, shrunk.height) + maxCellsPerSide - 1) / maxCellsPerSide
        let map = AttentionMap(shrunk, cellPixels: max(byCrop, byFrame))
        let cell = Double(map.cellPixels)
        let window = Window(map: map, width: cropWidth / cell, height: cropHeight / cell, coverage: coverage)
        // Offsets in cells: the centred one, every whole cell, and the far end.
        func candidates(crop: Double, source: Double, shrink: Double, current: Double) -> [Double] {
            let far = max(0, (source / shrink - crop) / cell)
            let centre = current / shrink / cell
            guard far > 1e-9 else { return [centre] }
            var offsets = [centre]
            var step = 0.0
            while step < far { offsets.append(step); step += 1 }
            offsets.append(far)
            return offsets
        }
        let xs = geometry.cropWidth < geometry.sourceWidth
            ? candidates(crop: cropWidth, source: geometry.sourceWidth, shrink: shrinkFactorX, current: geometry.cropX)
            : [geometry.cropX / shrinkFactorX / cell]
        let ys = geometry.cropHeight < geometry.sourceHeight
            ? candidates(crop: cropHeight, source: geometry.sourceHeight, shrink: shrinkFactorY, current: geometry.cropY)
            : [geometry.cropY / shrinkFactorY / cell]
        let centreScore = window.score(x: xs[0], y: ys[0])
        var best = (score: centreScore, x: xs[0], y: ys[0])
        for y in ys {
            for x in xs {
                let score = window.score(x: x, y: y)
                if score > best.score { best = (score, x, y) }
            }
        }
        // Within a thousandth of the centre's score there is nothing to prefer: stay centred.
        guard best.score > centreScore * 1.001 + 1e-6 else { return geometry }
        var moved = geometry
        moved.cropX = ThumbnailGeometry.clamp(best.x * cell * shrinkFactorX, to: geometry.sourceWidth - geometry.cropWidth)
        moved.cropY = ThumbnailGeometry.clamp(best.y * cell * shrinkFactorY, to: geometry.sourceHeight - geometry.cropHeight)
        if geometry.cropWidth >= geometry.sourceWidth { moved.cropX = geometry.cropX }
        if geometry.cropHeight >= geometry.sourceHeight { moved.cropY = geometry.cropY }
        return moved
    }

    /// The crop's window over the grid, with the mask's weight of each cell it covers.
    struct Window {
        let map: AttentionMap
        /// Window size, cells (fractional).
        let width: Double
        let height: Double
        let coverage: MaskCoverage

        /// Sum of the scores under the window whose top left is at (`x`, `y`) cells, each
        /// weighted by the mask's coverage at the cell's centre.
        func score(x: Double, y: Double) -> Float {
            guard width > 0, height > 0 else { return 0 }
            let firstColumn = max(0, CheckedConversion.clampedInteger(x, rounding: .down, to: 0...map.columns))
            let endColumn = CheckedConversion.clampedInteger(x + width, rounding: .up, to: 0...map.columns)
            let firstRow = max(0, CheckedConversion.clampedInteger(y, rounding: .down, to: 0...map.rows))
            let endRow = CheckedConversion.clampedInteger(y + height, rounding: .up, to: 0...map.rows)
            guard firstColumn < endColumn, firstRow < endRow else { return 0 }
            var columnWeights = [Double](repeating: -1, count: endColumn - firstColumn)
            for column in firstColumn..<endColumn {
                let u = (Double(column) + 0.5 - x) / width
                if u >= 0, u < 1 { columnWeights[column - firstColumn] = u }
            }
            var total: Float = 0
            map.scores.withUnsafeBufferPointer { scores in
                for row in firstRow..<endRow {
                    let v = (Double(row) + 0.5 - y) / height
                    guard v >= 0, v < 1 else { continue }
                    let base = row * map.columns
                    for column in firstColumn..<endColumn {
                        let u = columnWeights[column - firstColumn]
                        guard u >= 0 else { continue }
                        let score = scores[base + column]
                        guard score > 0 else { continue }
                        let fromCentre = (2 * u - 1) * (2 * u - 1) + (2 * v - 1) * (2 * v - 1)
                        total += score * coverage.weight(u: u, v: v) * Float(1 - Attention.centreBias * fromCentre)
                    }
                }
            }
            return total
        }
    }
}
