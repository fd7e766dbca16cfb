import Testing
@testable import ThumbImaging

/// The block shrink's sums: a translucent source reduced by a large factor (a 65,500-px-wide
/// RGBA panorama into a small slot asks for blocks of several hundred pixels a side).
@Suite struct BoxShrinkerTests {
    /// A `width` × `height` RGBA source of one colour, fed a row at a time.
    static func shrink(width: Int, height: Int, factor: Int, pixel: [UInt8], sampleStep: Int = 1) -> FloatImage {
        let shrinker = BoxShrinker(sourceWidth: width, sourceHeight: height, channels: 4, factor: factor, sampleStep: sampleStep)
        let row = [UInt8]((0..<width).flatMap { _ in pixel })
        row.withUnsafeBufferPointer { row in
            for _ in 0..<height { shrinker.consume(rows: row.baseAddress!, count: 1, rowStride: width * 4) }
        }
        #expect(shrinker.isComplete)
        return shrinker.output
    }

    @Test("blocks of up to 520 x 520 opaque white pixels average to white: the premultiplied sums (up to 255² a pixel) do not wrap past 258 x 258",
          arguments: [256, 257, 300, 520])
    func largeBlocksDoNotOverflow(factor: Int) {
        let image = Self.shrink(width: factor * 2, height: factor, factor: factor, pixel: [255, 255, 255, 255])
        #expect(image.width == 2 && image.height == 1)
        for pixel in image.pixels {
            // Premultiplied floats: colour × alpha / 255 and alpha, both 255 for opaque white.
            #expect(abs(pixel.x - 255) < 0.01 && abs(pixel.y - 255) < 0.01 && abs(pixel.z - 255) < 0.01 && abs(pixel.w - 255) < 0.01,
                    "factor \(factor): \(pixel)")
        }
    }

    @Test("a translucent colour keeps its premultiplied value through a block of 400 x 400")
    func translucentColour() {
        let image = Self.shrink(width: 400, height: 400, factor: 400, pixel: [200, 100, 50, 128])
        let pixel = image.pixels[0]
        let alpha: Float = 128
        #expect(abs(pixel.x - 200 * alpha / 255) < 0.01 && abs(pixel.y - 100 * alpha / 255) < 0.01, "\(pixel)")
        #expect(abs(pixel.z - 50 * alpha / 255) < 0.01 && abs(pixel.w - alpha) < 0.01, "\(pixel)")
    }
}

extension BoxShrinkerTests {
    @Test("an RGB block of 4,200 x 4,200 white pixels (a 65,500-px source into a few pixels) averages to white")
    func hugeOpaqueBlocks() {
        let width = 4200
        let shrinker = BoxShrinker(sourceWidth: width, sourceHeight: width, channels: 3, factor: width)
        let row = [UInt8](repeating: 255, count: width * 3)
        row.withUnsafeBufferPointer { row in
            for _ in 0..<width { shrinker.consume(rows: row.baseAddress!, count: 1, rowStride: width * 3) }
        }
        let pixel = shrinker.output.pixels[0]
        #expect(abs(pixel.x - 255) < 0.01 && abs(pixel.y - 255) < 0.01 && abs(pixel.z - 255) < 0.01, "\(pixel)")
    }
}
