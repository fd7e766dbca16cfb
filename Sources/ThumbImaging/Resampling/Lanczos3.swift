import Foundation

/// Separable Lanczos-3 resampling of premultiplied float pixels, the last step after the
/// block shrink. Coefficients follow Pillow's convolution (support scaled by the reduction
/// factor, taps clipped to the image and renormalised) so that results track that reference.
enum Lanczos3 {
    /// Rectangle in source pixels (may be fractional).
    struct Region {
        var x: Double, y: Double, width: Double, height: Double
    }

    private struct Taps {
        var first: [Int32] = []   // first source index per output index
        var count: [Int32] = []   // taps per output index
        var weights: [Float] = [] // `maxTaps` per output index
        var maxTaps = 0
    }

    static func kernel(_ x: Double) -> Double {
        let x = abs(x)
        guard x < 3 else { return 0 }
        guard x > 1e-8 else { return 1 }
        let px = Double.pi * x
        return 3 * sin(px) * sin(px / 3) / (px * px)
    }

    private static func taps(sourceSize: Int, start: Double, length: Double, outputSize: Int) -> Taps {
        let scale = length / Double(outputSize)
        let filterScale = max(scale, 1)
        let support = 3 * filterScale
        var taps = Taps()
        taps.maxTaps = Int(ceil(support)) * 2 + 1
        taps.weights = [Float](repeating: 0, count: taps.maxTaps * outputSize)
        for index in 0..<outputSize {
            let centre = start + (Double(index) + 0.5) * scale
            let low = max(0, Int(floor(centre - support + 0.5)))
            let high = min(sourceSize, Int(floor(centre + support + 0.5)))
            var weights = [Double]()
            var total = 0.0
            for source in low..<max(low, high) {
                let weight = kernel((Double(source) - centre + 0.5) / filterScale)
                weights.append(weight)
                total += weight
            }
            let used = min(weights.count, taps.maxTaps)
            taps.first.append(Int32(low))
            taps.count.append(Int32(used))
            for tap in 0..<used {
                taps.weights[index * taps.maxTaps + tap] = Float(total != 0 ? weights[tap] / total : 0)
            }
        }
        return taps
    }

    /// Resamples `region` of `image` to `outputWidth` × `outputHeight` pixels.
    static func resample(_ image: FloatImage, region: Region, outputWidth: Int, outputHeight: Int) -> FloatImage {
        let channels = image.channels
        let horizontal = taps(sourceSize: image.width, start: region.x, length: region.width, outputSize: outputWidth)
        let vertical = taps(sourceSize: image.height, start: region.y, length: region.height, outputSize: outputHeight)
        // Only the source rows that some vertical tap reads go through the horizontal pass.
        var firstRow = image.height, endRow = 0
        for index in 0..<outputHeight {
            firstRow = min(firstRow, Int(vertical.first[index]))
            endRow = max(endRow, Int(vertical.first[index] + vertical.count[index]))
        }
        if endRow <= firstRow { firstRow = 0; endRow = 0 }
        var middle = FloatImage(width: outputWidth, height: endRow - firstRow, channels: channels)
        image.samples.withUnsafeBufferPointer { src in
            middle.samples.withUnsafeMutableBufferPointer { dst in
                for row in firstRow..<endRow {
                    let input = src.baseAddress! + row * image.width * channels
                    let output = dst.baseAddress! + (row - firstRow) * outputWidth * channels
                    convolve(input: input, inputStep: channels, output: output, outputStep: channels,
                             taps: horizontal, outputCount: outputWidth, channels: channels)
                }
            }
        }
        var result = FloatImage(width: outputWidth, height: outputHeight, channels: channels)
        let rowLength = outputWidth * channels
        middle.samples.withUnsafeBufferPointer { src in
            result.samples.withUnsafeMutableBufferPointer { dst in
                var accumulator = [Float](repeating: 0, count: rowLength)
                for y in 0..<outputHeight {
                    for index in 0..<rowLength { accumulator[index] = 0 }
                    let first = Int(vertical.first[y]) - firstRow
                    for tap in 0..<Int(vertical.count[y]) {
                        let weight = vertical.weights[y * vertical.maxTaps + tap]
                        let input = src.baseAddress! + (first + tap) * rowLength
                        for index in 0..<rowLength { accumulator[index] += input[index] * weight }
                    }
                    let output = dst.baseAddress! + y * rowLength
                    for index in 0..<rowLength { output[index] = accumulator[index] }
                }
            }
        }
        return result
    }

    private static func convolve(input: UnsafePointer<Float>, inputStep: Int, output: UnsafeMutablePointer<Float>,
                                 outputStep: Int, taps: Taps, outputCount: Int, channels: Int) {
        taps.weights.withUnsafeBufferPointer { weights in
            for index in 0..<outputCount {
                let first = Int(taps.first[index])
                let count = Int(taps.count[index])
                let w = weights.baseAddress! + index * taps.maxTaps
                var p = input + first * inputStep
                if channels == 3 {
                    var r: Float = 0, g: Float = 0, b: Float = 0
                    for tap in 0..<count {
                        r += p[0] * w[tap]; g += p[1] * w[tap]; b += p[2] * w[tap]
                        p += inputStep
                    }
                    output[index * outputStep] = r; output[index * outputStep + 1] = g; output[index * outputStep + 2] = b
                } else {
                    var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                    for tap in 0..<count {
                        r += p[0] * w[tap]; g += p[1] * w[tap]; b += p[2] * w[tap]; a += p[3] * w[tap]
                        p += inputStep
                    }
                    let at = index * outputStep
                    output[at] = r; output[at + 1] = g; output[at + 2] = b; output[at + 3] = a
                }
            }
        }
    }
}

extension FloatImage {
    /// Back to 8-bit straight alpha, rounding and clamping the Lanczos overshoot.
    func pixelBuffer() -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        samples.withUnsafeBufferPointer { src in
            bytes.withUnsafeMutableBufferPointer { dst in
                @inline(__always) func clamp(_ value: Float) -> UInt8 {
                    UInt8(max(0, min(255, value + 0.5)))
                }
                if channels == 3 {
                    for index in 0..<(width * height * 3) { dst[index] = clamp(src[index]) }
                } else {
                    for pixel in 0..<(width * height) {
                        let at = pixel * 4
                        let alpha = max(0, min(255, src[at + 3]))
                        let unpremultiply: Float = alpha > 0.5 ? 255 / alpha : 0
                        dst[at] = clamp(src[at] * unpremultiply)
                        dst[at + 1] = clamp(src[at + 1] * unpremultiply)
                        dst[at + 2] = clamp(src[at + 2] * unpremultiply)
                        dst[at + 3] = clamp(alpha)
                    }
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: channels, bytes: bytes)
    }
}
