/// A coarse saliency map of a shrunk frame: each cell of `cellPixels` × `cellPixels` frame
/// pixels scores how much it draws the eye. Its own design after libvips' attention crop:
/// detail (the cell's own luminance spread, plus its contrast with its neighbours), saturated
/// colour and skin tones, each scaled by how opaque the cell is.
struct AttentionMap {
    let columns: Int
    let rows: Int
    let cellPixels: Int
    private(set) var scores: [Float]

    /// Weights of the three cues, in units of one cue's typical strong value: detail (luma
    /// standard deviation, 0...255) counts most, since the subjects that crops cut are objects
    /// and faces in front of plainer backgrounds; colour and skin break ties between detailed
    /// regions.
    static let detailPerLuma: Float = 1 / 16
    static let saturationWeight: Float = 0.35
    static let skinWeight: Float = 0.6
    /// smartcrop.js' skin direction in normalised RGB, and how near a cell must come to count.
    static let skinDirection = SIMD3<Float>(0.78, 0.57, 0.44)
    static let skinThreshold: Float = 0.8

    /// The map of a shrunk frame (premultiplied float pixels).
    init(_ image: FloatImage, cellPixels: Int) {
        self = image.pixels.withUnsafeBufferPointer { pixels in
            AttentionMap(width: image.width, height: image.height, hasAlpha: image.hasAlpha, cellPixels: cellPixels) { x, y in
                pixels[y * image.width + x]
            }
        }
    }

    /// The map of a decoded 8-bit RGB frame (`FrameRows`).
    init(_ frame: FrameRows, cellPixels: Int) {
        let stride = frame.rowStride
        self = frame.bytes.withUnsafeBufferPointer { bytes in
            AttentionMap(width: frame.width, height: frame.height, hasAlpha: false, cellPixels: cellPixels) { x, y in
                let at = y * stride + x * FrameRows.channels
                return SIMD4(Float(bytes[at]), Float(bytes[at + 1]), Float(bytes[at + 2]), 255)
            }
        }
    }

    /// `pixel(x, y)`: premultiplied RGBA, 0...255 a channel.
    @inline(__always)
    private init(width: Int, height: Int, hasAlpha: Bool, cellPixels: Int, pixel: (Int, Int) -> SIMD4<Float>) {
        let cell = max(1, cellPixels)
        self.cellPixels = cell
        let columns = (width + cell - 1) / cell, rows = (height + cell - 1) / cell
        self.columns = columns
        self.rows = rows
        let count = columns * rows
        var colour = [SIMD4<Float>](repeating: .zero, count: count)
        var lumaSquares = [Float](repeating: 0, count: count)
        var samplesPerCell = [Float](repeating: 0, count: count)
        let luma = SIMD4<Float>(0.299, 0.587, 0.114, 0)
        // Statistics, not pixels, are wanted: 4 to 7 samples along each side of a cell keep the
        // map's cost a small fraction of the frame's, whatever the cell size (a luma spread is
        // kept by sparse sampling; every pixel cost a twentieth of an avatar's render).
        let step = max(1, cell / 4)
        for y in stride(from: 0, to: height, by: step) {
            let rowBase = (y / cell) * columns
            for column in 0..<columns {
                var sum = SIMD4<Float>.zero, squares: Float = 0, samples: Float = 0
                for x in stride(from: column * cell, to: min(width, column * cell + cell), by: step) {
                    let value = pixel(x, y)
                    let brightness = (value * luma).sum()
                    sum += value
                    squares += brightness * brightness
                    samples += 1
                }
                colour[rowBase + column] += sum
                lumaSquares[rowBase + column] += squares
                samplesPerCell[rowBase + column] += samples
            }
        }
        let opaqueAlpha: Float = hasAlpha ? 0 : 255
        var meanLuma = [Float](repeating: 0, count: count)
        var scores = [Float](repeating: 0, count: count)
        for index in 0..<count {
            var mean = colour[index] / max(1, samplesPerCell[index])
            if opaqueAlpha > 0 { mean[3] = opaqueAlpha }
            let lumaMean = (mean * luma).sum()
            meanLuma[index] = lumaMean
            let spread = max(0, lumaSquares[index] / max(1, samplesPerCell[index]) - lumaMean * lumaMean).squareRoot()
            let opacity = mean[3] / 255
            guard opacity > 1.0 / 255 else { continue }
            let straight = SIMD3(mean[0], mean[1], mean[2]) / opacity
            scores[index] = spread * Self.detailPerLuma + opacity * Self.colourScore(straight)
        }
        // Contrast with the four neighbours: a cell on a subject's outline, or inside detail
        // coarser than a cell.
        for row in 0..<rows {
            for column in 0..<columns {
                let index = row * columns + column
                let centre = meanLuma[index]
                var difference: Float = 0
                if column > 0 { difference += abs(centre - meanLuma[index - 1]) }
                if column + 1 < columns { difference += abs(centre - meanLuma[index + 1]) }
                if row > 0 { difference += abs(centre - meanLuma[index - columns]) }
                if row + 1 < rows { difference += abs(centre - meanLuma[index + columns]) }
                scores[index] += difference / 4 * Self.detailPerLuma
            }
        }
        self.scores = scores
    }

    /// Saturation and skin of one cell's straight colour (0...255 a channel).
    static func colourScore(_ rgb: SIMD3<Float>) -> Float {
        let high = max(rgb.x, rgb.y, rgb.z), low = min(rgb.x, rgb.y, rgb.z)
        let saturation = high > 0 ? (high - low) / 255 : 0
        var score = saturationWeight * max(0, saturation - 0.2) / 0.8
        let length = (rgb * rgb).sum().squareRoot()
        let brightness = (rgb * SIMD3(0.299, 0.587, 0.114)).sum() / 255
        if length > 0, brightness > 0.2, brightness < 0.95 {
            let offset = rgb / length - skinDirection
            let closeness = 1 - (offset * offset).sum().squareRoot()
            if closeness > skinThreshold { score += skinWeight * (closeness - skinThreshold) / (1 - skinThreshold) }
        }
        return score
    }
}
