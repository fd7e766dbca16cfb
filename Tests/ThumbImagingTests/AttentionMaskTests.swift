import Foundation
import Testing
@testable import ThumbImaging

/// Attention scores only what the kind's mask keeps, and every decoder path places it alike.
@Suite("Attention: masks and decoders")
struct AttentionMaskTests {
    /// A 300 x 100 grey frame with detail in two places: a 10-px checkerboard strip down the left
    /// edge, and one 24-px checkerboard square at the centre of the rightmost square. The strip
    /// holds 1.7 times the detail, but a circle keeps under half of it.
    static func frame() -> FloatImage {
        var image = FloatImage(width: 300, height: 100, hasAlpha: false)
        func checker(x: Range<Int>, y: Range<Int>) -> [(Int, Int)] { y.flatMap { row in x.map { ($0, row) } } }
        for index in image.pixels.indices { image.pixels[index] = SIMD4(128, 128, 128, 255) }
        let patches = [checker(x: 0..<10, y: 0..<100), checker(x: 238..<262, y: 38..<62)]
        for (x, y) in patches.joined() {
            let value: Float = (x + y) % 2 == 0 ? 0 : 255
            image.pixels[y * 300 + x] = SIMD4(value, value, value, 255)
        }
        return image
    }

    static func placedX(_ mask: SlotKind.Mask) -> Double {
        let geometry = ThumbnailGeometry(sourceWidth: 300, sourceHeight: 100, slotWidth: 100, slotHeight: 100, mode: .fill,
                                         upscale: false)
        let coverage = MaskCoverage(mask: mask, widthPixels: 100, heightPixels: 100, pixelsPerPoint: 1)
        return Attention.place(geometry, on: frame(), shrinkFactorX: 1, shrinkFactorY: 1, coverage: coverage).cropX
    }

    @Test("a circle prefers the detail it keeps; no mask (or small corners) the most detail")
    func maskWeighting() {
        let unmasked = Self.placedX(.none)
        let circle = Self.placedX(.circle)
        let rounded = Self.placedX(.cornerRadius(points: 4))
        #expect(unmasked < 10, "no mask: the strip's detail wins, crop at \(unmasked)")
        #expect(abs(circle - 200) <= 10, "circle: the square patch wins, centred, crop at \(circle)")
        #expect(rounded < 10, "4-px corners keep the strip, crop at \(rounded)")
    }

    @Test("a frame with nothing to prefer keeps the centred crop")
    func flatStaysCentred() {
        var image = FloatImage(width: 300, height: 100, hasAlpha: false)
        for index in image.pixels.indices { image.pixels[index] = SIMD4(40, 90, 200, 255) }
        let geometry = ThumbnailGeometry(sourceWidth: 300, sourceHeight: 100, slotWidth: 100, slotHeight: 100, mode: .fill,
                                         upscale: false)
        let coverage = MaskCoverage(mask: .circle, widthPixels: 100, heightPixels: 100, pixelsPerPoint: 1)
        #expect(Attention.place(geometry, on: image, shrinkFactorX: 1, shrinkFactorY: 1, coverage: coverage).cropX == 100)
    }

    /// The same generated pictures as PNG and WebP (a FrameLoader format) crop where the JPEG does.
    @Test("PNG and WebP sources get the same attention crop as JPEG", arguments: [ImageFormat.png, .webp])
    func decoderPaths(_ format: ImageFormat) throws {
        let set = try AttentionCropSet(count: 12)
        defer { set.remove() }
        var request = try Sample.request("contact-avatar@3x")
        request.kind.crop = .attention
        var inside = 0, near = 0
        for sample in set.samples {
            let jpeg = try loadSource(sample.path)
            let pixels = try Thumbnailer().render(jpeg, request: ThumbnailRequest(kind: SlotKind(
                name: "as-is", widthPoints: Double(sample.width), heightPoints: Double(sample.height)), scale: 1)).pixels
            var settings = EncoderSettings()
            settings.webpMode = .lossless
            let other = SourceBytes(try ImageEncoder.encode(pixels, as: format, settings: settings))
            #expect(other.format == (format == .png ? .png : .webp))
            let fromJPEG = try Thumbnailer().render(jpeg, request: request).crop
            let crop = try Thumbnailer().render(other, request: request).crop
            if AttentionCropSet.isInside(sample.subject, crop: crop) { inside += 1 }
            if abs(crop.x - fromJPEG.x) + abs(crop.y - fromJPEG.y) <= 0.05 * Double(AttentionCropSet.shortSidePixels) { near += 1 }
        }
        #expect(inside >= 11 && near >= 11, "\(format): subject inside \(inside)/12, crop near the JPEG's \(near)/12")
    }
}
