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
        // No more taps than the source has pixels: clamping keeps a degenerate scale from trapping.
        taps.maxTaps = CheckedConversion.clampedInteger(support, rounding: .up, to: 0...(sourceSize + 1)) * 2 + 1
        taps.weights = [Float](repeating: 0, count: taps.maxTaps * outputSize)
        for index in 0..<outputSize {
            let centre = start + (Double(index) + 0.5) * scale
            let low = CheckedConversion.clampedInteger(centre - support + 0.5, rounding: .down, to: 0...sourceSize)
            let high = CheckedConversion.clampedInteger(centre + support + 0.5, rounding: .down, to: 0...sourceSize)
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
        let horizontal = taps(sourceSize: image.width, start: region.x, length: region.width, outputSize: outputWidth)
        let vertical = taps(sourceSize: image.height, start: region.y, length: region.height, outputSize: outputHeight)
        // Only the source rows that some vertical tap reads go through the horizontal pass.
        var firstRow = image.height, endRow = 0
        for index in 0..<outputHeight {
            firstRow = min(firstRow, Int(vertical.first[index]))
            endRow = max(endRow, Int(vertical.first[index] + vertical.count[index]))
        }
        if endRow <= firstRow { firstRow = 0; endRow = 0 }
        var middle = FloatImage(width: outputWidth, height: endRow - firstRow, hasAlpha: image.hasAlpha, zeroed: false)
        image.pixels.withUnsafeBufferPointer { source in
            middle.pixels.withUnsafeMutableBufferPointer { destination in
                horizontal.weights.withUnsafeBufferPointer { weights in
                    for row in firstRow..<endRow {
                        let input = source.baseAddress! + row * image.width
                        let output = destination.baseAddress! + (row - firstRow) * outputWidth
                        for x in 0..<outputWidth {
                            let taps = Int(horizontal.count[x])
                            let pixel = input + Int(horizontal.first[x])
                            let weight = weights.baseAddress! + x * horizontal.maxTaps
                            var sum = SIMD4<Float>.zero
                            for tap in 0..<taps { sum += pixel[tap] * weight[tap] }
                            output[x] = sum
                        }
                    }
                }
            }
        }
        var result = FloatImage(width: outputWidth, height: outputHeight, hasAlpha: image.hasAlpha)
        middle.pixels.withUnsafeBufferPointer { source in
            result.pixels.withUnsafeMutableBufferPointer { destination in
                vertical.weights.withUnsafeBufferPointer { weights in
                    for y in 0..<outputHeight {
                        let output = destination.baseAddress! + y * outputWidth
                        let first = source.baseAddress! + (Int(vertical.first[y]) - firstRow) * outputWidth
                        let weight = weights.baseAddress! + y * vertical.maxTaps
                        for tap in 0..<Int(vertical.count[y]) {
                            let input = first + tap * outputWidth
                            let w = weight[tap]
                            for x in 0..<outputWidth { output[x] += input[x] * w }
                        }
                    }
                }
            }
        }
        return result
    }
}

extension FloatImage {
    /// Back to 8-bit straight alpha (RGB when the source had none), rounding and clamping
    /// the Lanczos overshoot.
    func pixelBuffer() -> PixelBuffer {
        let channels = hasAlpha ? 4 : 3
        var bytes = [UInt8](repeating: 0, count: width * height * channels)
        pixels.withUnsafeBufferPointer { source in
            bytes.withUnsafeMutableBufferPointer { destination in
                let low = SIMD4<Float>(repeating: 0), high = SIMD4<Float>(repeating: 255)
                for index in 0..<(width * height) {
                    var pixel = source[index]
                    if hasAlpha {
                        let alpha = pixel.clamped(lowerBound: low, upperBound: high)[3]
                        let unpremultiply: Float = alpha > 0.5 ? 255 / alpha : 0
                        pixel = SIMD4(pixel[0] * unpremultiply, pixel[1] * unpremultiply, pixel[2] * unpremultiply, alpha)
                    }
                    let rounded = (pixel + 0.5).clamped(lowerBound: low, upperBound: high)
                    let at = index * channels
                    destination[at] = UInt8(rounded[0])
                    destination[at + 1] = UInt8(rounded[1])
                    destination[at + 2] = UInt8(rounded[2])
                    if hasAlpha { destination[at + 3] = UInt8(rounded[3]) }
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: channels, bytes: bytes)
    }
}
