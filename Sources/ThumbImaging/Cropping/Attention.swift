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
        place(geometry, frameWidth: shrunk.width, frameHeight: shrunk.height, shrinkFactorX: shrinkFactorX,
              shrinkFactorY: shrinkFactorY, coverage: coverage) { AttentionMap(shrunk, cellPixels: $0) }
    }

    /// The same on a decoded frame held as bytes.
    static func place(_ geometry: ThumbnailGeometry, on frame: FrameRows, shrinkFactorX: Double, shrinkFactorY: Double,
                      coverage: MaskCoverage) -> ThumbnailGeometry {
        place(geometry, frameWidth: frame.width, frameHeight: frame.height, shrinkFactorX: shrinkFactorX,
              shrinkFactorY: shrinkFactorY, coverage: coverage) { AttentionMap(frame, cellPixels: $0) }
    }

    /// `map(cellPixels)` scores the frame (`frameWidth` × `frameHeight`) on a grid of that cell size.
    private static func place(_ geometry: ThumbnailGeometry, frameWidth: Int, frameHeight: Int, shrinkFactorX: Double,
                              shrinkFactorY: Double, coverage: MaskCoverage,
                              map makeMap: (Int) -> AttentionMap) -> ThumbnailGeometry {
        guard geometry.hasFreedom, frameWidth > 0, frameHeight > 0,
              shrinkFactorX.isFinite, shrinkFactorY.isFinite, shrinkFactorX > 0, shrinkFactorY > 0 else { return geometry }
        let cropWidth = geometry.cropWidth / shrinkFactorX, cropHeight = geometry.cropHeight / shrinkFactorY
        let byCrop = CheckedConversion.clampedInteger(min(cropWidth, cropHeight) / cellsAcrossCrop, rounding: .down,
                                                      to: 1...Int(Int32.max))
        let byFrame = (max(frameWidth, frameHeight) + maxCellsPerSide - 1) / maxCellsPerSide
        let map = makeMap(max(byCrop, byFrame))
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
    final class Window {
        let map: AttentionMap
        /// Window size, cells (fractional).
        let width: Double
        let height: Double
        let coverage: MaskCoverage
        /// Each cell's weight under a window, by where the window starts inside its first cell:
        /// every whole-cell step of the search shares one table (the scan's cost was recomputing
        /// the mask's coverage, a square root, for every cell of every candidate).
        private var tables: [SIMD2<Double>: WeightTable] = [:]

        init(map: AttentionMap, width: Double, height: Double, coverage: MaskCoverage) {
            self.map = map
            self.width = width
            self.height = height
            self.coverage = coverage
        }

        /// Weights of the cells a window covers, row by row, for a window whose top left lies
        /// `offset` (0..<1 each) into its first cell; 0 for a cell whose centre it leaves out.
        struct WeightTable {
            let columns: Int
            let rows: Int
            let weights: [Float]
        }

        func table(offset: SIMD2<Double>) -> WeightTable {
            if let table = tables[offset] { return table }
            let limit = 0...(Attention.maxCellsPerSide + 2)
            let columns = CheckedConversion.clampedInteger(offset.x + width, rounding: .up, to: limit)
            let rows = CheckedConversion.clampedInteger(offset.y + height, rounding: .up, to: limit)
            var weights = [Float](repeating: 0, count: columns * rows)
            for row in 0..<rows {
                let v = (Double(row) + 0.5 - offset.y) / height
                guard v >= 0, v < 1 else { continue }
                for column in 0..<columns {
                    let u = (Double(column) + 0.5 - offset.x) / width
                    guard u >= 0, u < 1 else { continue }
                    let fromCentre = (2 * u - 1) * (2 * u - 1) + (2 * v - 1) * (2 * v - 1)
                    weights[row * columns + column] = coverage.weight(u: u, v: v) * Float(1 - Attention.centreBias * fromCentre)
                }
            }
            let table = WeightTable(columns: columns, rows: rows, weights: weights)
            tables[offset] = table
            return table
        }

        /// Sum of the scores under the window whose top left is at (`x`, `y`) cells, each
        /// weighted by the mask's coverage at the cell's centre.
        func score(x: Double, y: Double) -> Float {
            guard width > 0, height > 0, x >= 0, y >= 0, x.isFinite, y.isFinite else { return 0 }
            let firstColumn = CheckedConversion.clampedInteger(x, rounding: .down, to: 0...map.columns)
            let firstRow = CheckedConversion.clampedInteger(y, rounding: .down, to: 0...map.rows)
            let table = table(offset: SIMD2(x - x.rounded(.down), y - y.rounded(.down)))
            let columns = min(table.columns, map.columns - firstColumn), rows = min(table.rows, map.rows - firstRow)
            guard columns > 0, rows > 0 else { return 0 }
            var total: Float = 0
            map.scores.withUnsafeBufferPointer { scores in
                table.weights.withUnsafeBufferPointer { weights in
                    for row in 0..<rows {
                        let cells = scores.baseAddress! + (firstRow + row) * map.columns + firstColumn
                        let weighed = weights.baseAddress! + row * table.columns
                        for column in 0..<columns { total += cells[column] * weighed[column] }
                    }
                }
            }
            return total
        }
    }
}
