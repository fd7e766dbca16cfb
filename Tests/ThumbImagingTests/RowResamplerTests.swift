import Foundation
import Testing
@testable import ThumbImaging

/// The Lanczos step fed row by row (`RowResampler`, the JPEG path's outputs without a block
/// shrink) and the four-at-a-time horizontal pass give the very same floats as the straight
/// algorithm: one output at a time over the whole frame widened to floats, as before.
@Suite("Row-fed Lanczos")
struct RowResamplerTests {
    /// Deterministic photo-like noise: a gradient plus a linear congruential generator.
    static func rgb(width: Int, height: Int) -> [UInt8] {
        var state: UInt32 = 12345
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for index in bytes.indices {
            state = state &* 1_664_525 &+ 1_013_904_223
            bytes[index] = UInt8(truncatingIfNeeded: (index / 3 % width) / 4 + Int(state >> 26))
        }
        return bytes
    }

    /// The resampling as written before: the frame as floats, each output's taps summed alone.
    static func reference(_ bytes: [UInt8], width: Int, height: Int, region: Lanczos3.Region,
                          outputWidth: Int, outputHeight: Int) -> [SIMD4<Float>] {
        let frame = (0..<width * height).map { SIMD4(Float(bytes[$0 * 3]), Float(bytes[$0 * 3 + 1]), Float(bytes[$0 * 3 + 2]), 255) }
        let horizontal = Lanczos3.taps(sourceSize: width, start: region.x, length: region.width, outputSize: outputWidth)
        let vertical = Lanczos3.taps(sourceSize: height, start: region.y, length: region.height, outputSize: outputHeight)
        var middle = [SIMD4<Float>](repeating: .zero, count: outputWidth * height)
        for row in 0..<height {
            for x in 0..<outputWidth {
                var sum = SIMD4<Float>.zero
                for tap in 0..<Int(horizontal.count[x]) {
                    sum += frame[row * width + Int(horizontal.first[x]) + tap] * horizontal.weights[x * horizontal.maxTaps + tap]
                }
                middle[row * outputWidth + x] = sum
            }
        }
        var result = [SIMD4<Float>](repeating: .zero, count: outputWidth * outputHeight)
        for y in 0..<outputHeight {
            for tap in 0..<Int(vertical.count[y]) {
                let w = vertical.weights[y * vertical.maxTaps + tap]
                for x in 0..<outputWidth { result[y * outputWidth + x] += middle[(Int(vertical.first[y]) + tap) * outputWidth + x] * w }
            }
        }
        return result
    }

    static let cases: [(String, Int, Int, Lanczos3.Region, Int, Int)] = [
        ("large from 1/4 of 4000x3000", 1000, 750, Lanczos3.Region(x: 0, y: 0, width: 1000, height: 750), 256, 192),
        ("a centred square crop", 500, 375, Lanczos3.Region(x: 62.5, y: 0, width: 375, height: 375), 144, 144),
        ("an off-centre fractional crop", 333, 217, Lanczos3.Region(x: 10.25, y: 30.5, width: 200.5, height: 150.25), 61, 47),
        ("enlarging", 40, 30, Lanczos3.Region(x: 0, y: 0, width: 40, height: 30), 97, 71),
        ("one column", 1, 9, Lanczos3.Region(x: 0, y: 0, width: 1, height: 9), 1, 3),
    ]

    @Test("row by row, four outputs at a time: the same floats as the straight algorithm", arguments: 0..<cases.count)
    func sameFloats(_ index: Int) throws {
        let (name, width, height, region, outputWidth, outputHeight) = Self.cases[index]
        let bytes = Self.rgb(width: width, height: height)
        let expected = Self.reference(bytes, width: width, height: height, region: region,
                                      outputWidth: outputWidth, outputHeight: outputHeight)
        let resampler = RowResampler(sourceWidth: width, sourceHeight: height, region: region,
                                     outputWidth: outputWidth, outputHeight: outputHeight)
        bytes.withUnsafeBufferPointer { buffer in
            // In uneven batches, as a decoder hands them over.
            let batches = [1, 16, 3, 16, 7]
            var row = 0, call = 0
            while row < height {
                let count = min(batches[call % batches.count], height - row)
                resampler.consume(rows: buffer.baseAddress! + row * width * 3, count: count, rowStride: width * 3)
                row += count
                call += 1
            }
        }
        #expect(resampler.isComplete)
        #expect(resampler.finish().pixels == expected, "\(name)")

        // And the whole-frame path (block shrink at factor 1, then Lanczos3.resample), as PNGs use it.
        let shrinker = BoxShrinker(sourceWidth: width, sourceHeight: height, channels: 3, factor: 1)
        bytes.withUnsafeBufferPointer { shrinker.consume(rows: $0.baseAddress!, count: height, rowStride: width * 3) }
        let whole = Lanczos3.resample(shrinker.output, region: region, outputWidth: outputWidth, outputHeight: outputHeight)
        #expect(whole.pixels == expected, "\(name)")

        // And the frame kept as bytes for an attention crop (half the rows copied in, half
        // written in place as libjpeg does), then streamed through a fresh resampler.
        let frame = FrameRows(width: width, height: height)
        bytes.withUnsafeBufferPointer { frame.consume(rows: $0.baseAddress!, count: height / 2, rowStride: width * 3) }
        while !frame.isComplete {
            let first = frame.rowsConsumed
            _ = try frame.appendRows(maxRows: 5) { destination, room in
                for offset in 0..<room * width * 3 { destination[offset] = bytes[first * width * 3 + offset] }
                return room
            }
        }
        #expect(frame.bytes == bytes, "\(name)")
        let kept = frame.resample(RowResampler(sourceWidth: width, sourceHeight: height, region: region,
                                               outputWidth: outputWidth, outputHeight: outputHeight))
        #expect(kept.pixels == expected, "\(name)")
    }

    @Test("a sampled block shrink averages the lattice it reads; at step 1 it is the exact mean")
    func sampledBlockShrink() {
        // 10x10 blocks over a 23x12 frame: partial blocks at the right and bottom edges.
        let width = 23, height = 12, factor = 10
        let bytes = Self.rgb(width: width, height: height)
        for step in [1, 3] {
            let shrinker = BoxShrinker(sourceWidth: width, sourceHeight: height, channels: 3, factor: factor, sampleStep: step)
            bytes.withUnsafeBufferPointer { shrinker.consume(rows: $0.baseAddress!, count: height, rowStride: width * 3) }
            #expect(shrinker.isComplete && shrinker.output.width == 3 && shrinker.output.height == 2)
            for blockY in 0..<2 {
                for blockX in 0..<3 {
                    var sum = SIMD3<Double>.zero, samples = 0.0
                    for y in stride(from: blockY * factor, to: min(height, blockY * factor + factor), by: step) {
                        for x in stride(from: blockX * factor, to: min(width, blockX * factor + factor), by: step) {
                            let at = (y * width + x) * 3
                            sum += SIMD3(Double(bytes[at]), Double(bytes[at + 1]), Double(bytes[at + 2]))
                            samples += 1
                        }
                    }
                    let pixel = shrinker.output.pixels[blockY * 3 + blockX]
                    let mean = sum / samples
                    #expect(abs(Double(pixel.x) - mean.x) < 1e-3 && abs(Double(pixel.y) - mean.y) < 1e-3
                            && abs(Double(pixel.z) - mean.z) < 1e-3 && pixel.w == 255, "step \(step) block \(blockX),\(blockY)")
                }
            }
        }
    }

    @Test("the JPEG path's large thumbnail of a 12-MP photo holds its output and two rows of floats, not the frame")
    func holdsRowsNotFrame() {
        // 1000x750 decoded at 1/4; 256x192 out: the horizontally resampled rows are 256 wide.
        let resampler = RowResampler(sourceWidth: 1000, sourceHeight: 750,
                                     region: Lanczos3.Region(x: 0, y: 0, width: 1000, height: 750), outputWidth: 256, outputHeight: 192)
        #expect(resampler.heldFloatPixels == 256 * 192 + 1000 + 256, "the output, one widened and one resampled row")
        #expect(resampler.heldFloatPixels * 3 < 1000 * 750)
    }
}
