import Foundation
import Testing
import ThumbImaging

/// EXIF orientation: every `Landscape_N` / `Portrait_N` file shows the same upright picture.
@Suite("EXIF orientation")
struct OrientationTests {
    static let cases: [(String, Int)] = ["Landscape", "Portrait"].flatMap { shape in (0...8).map { (shape, $0) } }

    static func render(_ name: String, appliesOrientation: Bool = true) throws -> RenderedImage {
        let source = try loadSource(Paths.corpusFile("exif-orientation", name))
        return try Thumbnailer().render(source, request: Sample.request("large", format: .png,
                                                                        appliesOrientation: appliesOrientation))
    }

    @Test("renders upright and matches the orientation-1 file", arguments: cases)
    func upright(_ shape: String, _ orientation: Int) throws {
        let image = try Self.render("\(shape)_\(orientation).jpg")
        let reference = try Self.render("\(shape)_1.jpg")
        let (w, h) = (image.pixels.width, image.pixels.height)
        let expected = shape == "Landscape" ? (256, 171) : (171, 256)
        #expect(w == expected.0 && h == expected.1, "\(shape)_\(orientation): got \(w)x\(h), expected \(expected.0)x\(expected.1)")
        #expect(shape == "Landscape" ? w > h : h > w)
        #expect(image.sourceWidth == (shape == "Landscape" ? 1800 : 1200)
                && image.sourceHeight == (shape == "Landscape" ? 1200 : 1800),
                "\(shape)_\(orientation): source reported as \(image.sourceWidth)x\(image.sourceHeight)")
        guard w == reference.pixels.width && h == reference.pixels.height else { return }
        let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels,
                                             reference.pixels.bytes, channelsB: reference.pixels.channels)
        #expect(error < 8, "\(shape)_\(orientation): mean abs difference \(error) from \(shape)_1")
        // The picture is not symmetric: a wrong flip would be far off. Check the test can tell.
        if orientation == 1 {
            let mirrored = Self.mirrored(reference.pixels)
            let flipError = Pixels.meanAbsoluteError(mirrored.bytes, channelsA: mirrored.channels,
                                                     reference.pixels.bytes, channelsB: reference.pixels.channels)
            #expect(flipError > 20, "a mirrored \(shape) differs by only \(flipError): the comparison is too weak")
        }
    }

    @Test("appliesOrientation false keeps the stored orientation", arguments: ["Landscape", "Portrait"])
    func storedOrientation(_ shape: String) throws {
        let stored = try Self.render("\(shape)_6.jpg", appliesOrientation: false)
        let upright = try Self.render("\(shape)_1.jpg")
        let d = upright.pixels
        // Orientation 6: displayed (x, y) = stored (y, H - 1 - x), H the stored height = displayed width.
        #expect(stored.pixels.width == d.height && stored.pixels.height == d.width,
                "\(shape)_6 unrotated: got \(stored.pixels.width)x\(stored.pixels.height), expected \(d.height)x\(d.width)")
        #expect(stored.sourceWidth == (shape == "Landscape" ? 1200 : 1800),
                "\(shape)_6 unrotated: source reported as \(stored.sourceWidth)x\(stored.sourceHeight)")
        guard stored.pixels.width == d.height && stored.pixels.height == d.width else { return }
        var expected = PixelBuffer(width: d.height, height: d.width, channels: d.channels)
        for sy in 0..<expected.height {
            for sx in 0..<expected.width {
                let from = (sx * d.width + (expected.height - 1 - sy)) * d.channels
                let to = (sy * expected.width + sx) * d.channels
                for c in 0..<d.channels { expected.bytes[to + c] = d.bytes[from + c] }
            }
        }
        let error = Pixels.meanAbsoluteError(stored.pixels.bytes, channelsA: stored.pixels.channels,
                                             expected.bytes, channelsB: expected.channels)
        #expect(error < 8, "\(shape)_6 unrotated differs from the upright render turned back by \(error)")
    }

    @Test("fill crops are taken from the displayed frame", arguments: ["Landscape_6.jpg", "Portrait_8.jpg", "Landscape_5.jpg"])
    func fillCrop(_ name: String) throws {
        let source = try loadSource(Paths.corpusFile("exif-orientation", name))
        let request = try Sample.request("carousel-card@2x")
        let image = try Thumbnailer().render(source, request: request)
        let referenceName = name.replacingOccurrences(of: #"_\d"#, with: "_1", options: .regularExpression)
        let reference = try Thumbnailer().render(loadSource(Paths.corpusFile("exif-orientation", referenceName)), request: request)
        #expect(image.pixels.width == reference.pixels.width && image.pixels.height == reference.pixels.height)
        if image.pixels.width == reference.pixels.width && image.pixels.height == reference.pixels.height {
            let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels,
                                                 reference.pixels.bytes, channelsB: reference.pixels.channels)
            #expect(error < 8, "\(name) at carousel-card@2x: mean abs difference \(error)")
        }
        // A fill kind too: the avatar is the centre square of the upright picture.
        let avatar = try Sample.request("contact-avatar@3x")
        let a = try Thumbnailer().render(source, request: avatar)
        let b = try Thumbnailer().render(loadSource(Paths.corpusFile("exif-orientation", referenceName)), request: avatar)
        #expect(a.pixels.width == 144 && a.pixels.height == 144)
        let error = Pixels.meanAbsoluteError(a.pixels.bytes, channelsA: a.pixels.channels, b.pixels.bytes, channelsB: b.pixels.channels)
        #expect(error < 8, "\(name) at contact-avatar@3x: mean abs difference \(error)")
    }

    static func mirrored(_ image: PixelBuffer) -> PixelBuffer {
        var out = image
        for y in 0..<image.height {
            for x in 0..<image.width {
                for c in 0..<image.channels {
                    out.bytes[(y * image.width + x) * image.channels + c] =
                        image.bytes[(y * image.width + image.width - 1 - x) * image.channels + c]
                }
            }
        }
        return out
    }
}
