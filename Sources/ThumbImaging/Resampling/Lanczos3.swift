import Foundation

/// Separable Lanczos-3 resampling of premultiplied float pixels, the last step after the
/// block shrink. Coefficients follow Pillow's convolution (support scaled by the reduction
/// factor, taps clipped to the image and renormalised) so that results track that reference.
enum Lanczos3 {
    /// Rectangle in source pixels (may be fractional).
    struct Region {
        var x: Double, y: Double, width: Double, height: Double
    }

    struct Taps {
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

    static func taps(sourceSize: Int, start: Double, length: Double, outputSize: Int) -> Taps {
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
        let rows = rowsRead(by: vertical, sourceHeight: image.height)
        var middle = FloatImage(width: outputWidth, height: rows.count, hasAlpha: image.hasAlpha, zeroed: false)
        image.pixels.withUnsafeBufferPointer { source in
            middle.pixels.withUnsafeMutableBufferPointer { destination in
                for row in rows {
                    horizontalRow(source.baseAddress! + row * image.width, taps: horizontal,
                                  into: destination.baseAddress! + (row - rows.lowerBound) * outputWidth)
                }
            }
        }
        return verticalPass(middle, firstRow: rows.lowerBound, taps: vertical, outputHeight: outputHeight)
    }

    /// The source rows that some vertical tap reads: only they go through the horizontal pass.
    static func rowsRead(by vertical: Taps, sourceHeight: Int) -> Range<Int> {
        var firstRow = sourceHeight, endRow = 0
        for index in vertical.first.indices {
            firstRow = min(firstRow, Int(vertical.first[index]))
            endRow = max(endRow, Int(vertical.first[index] + vertical.count[index]))
        }
        return endRow <= firstRow ? 0..<0 : firstRow..<endRow
    }

    /// One row of the horizontal pass. Four outputs at a time, each summing its taps in order (the
    /// same arithmetic as one at a time, so the same bits): their four dependency chains overlap,
    /// where one chain alone waits on each add. `input` holds the row from column `firstColumn`
    /// on (every tap must lie at or after it).
    static func horizontalRow(_ input: UnsafePointer<SIMD4<Float>>, firstColumn: Int = 0, taps: Taps,
                              into output: UnsafeMutablePointer<SIMD4<Float>>) {
        let stride = taps.maxTaps
        taps.first.withUnsafeBufferPointer { first in
            taps.count.withUnsafeBufferPointer { count in
                taps.weights.withUnsafeBufferPointer { weights in
                    let width = first.count
                    var x = 0
                    while x + 4 <= width {
                        let p0 = input + (Int(first[x]) - firstColumn), p1 = input + (Int(first[x + 1]) - firstColumn)
                        let p2 = input + (Int(first[x + 2]) - firstColumn), p3 = input + (Int(first[x + 3]) - firstColumn)
                        let w0 = weights.baseAddress! + x * stride, w1 = w0 + stride, w2 = w1 + stride, w3 = w2 + stride
                        let c0 = Int(count[x]), c1 = Int(count[x + 1]), c2 = Int(count[x + 2]), c3 = Int(count[x + 3])
                        let common = min(c0, c1, c2, c3)
                        var s0 = SIMD4<Float>.zero, s1 = SIMD4<Float>.zero, s2 = SIMD4<Float>.zero, s3 = SIMD4<Float>.zero
                        for tap in 0..<common {
                            s0 += p0[tap] * w0[tap]
                            s1 += p1[tap] * w1[tap]
                            s2 += p2[tap] * w2[tap]
                            s3 += p3[tap] * w3[tap]
                        }
                        for tap in common..<c0 { s0 += p0[tap] * w0[tap] }
                        for tap in common..<c1 { s1 += p1[tap] * w1[tap] }
                        for tap in common..<c2 { s2 += p2[tap] * w2[tap] }
                        for tap in common..<c3 { s3 += p3[tap] * w3[tap] }
                        output[x] = s0
                        output[x + 1] = s1
                        output[x + 2] = s2
                        output[x + 3] = s3
                        x += 4
                    }
                    while x < width {
                        let pixel = input + (Int(first[x]) - firstColumn)
                        let weight = weights.baseAddress! + x * stride
                        var sum = SIMD4<Float>.zero
                        for tap in 0..<Int(count[x]) { sum += pixel[tap] * weight[tap] }
                        output[x] = sum
                        x += 1
                    }
                }
            }
        }
    }

    /// The vertical pass over the horizontally resampled rows (`middle`, whose row 0 is source row `firstRow`).
    static func verticalPass(_ middle: FloatImage, firstRow: Int, taps vertical: Taps, outputHeight: Int) -> FloatImage {
        let outputWidth = middle.width
        var result = FloatImage(width: outputWidth, height: outputHeight, hasAlpha: middle.hasAlpha)
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
