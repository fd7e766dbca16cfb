import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The manifest's WebP files: sizes for three kinds, pixels close to Pillow's, the first frame of
/// an animation, EXIF orientation, transparency, ICC.
@Suite("WebP corpus")
struct WebPTests {
    static let kinds = ["contact-avatar@3x", "product-grid@3x", "large"]

    @Test("the manifest lists the WebP files") func manifestHasRows() throws {
        let okRows = try WebPFixtures.okRows()
        #expect(okRows.count >= 13, "\(okRows.count) OK WebP rows")
    }

    /// Mean absolute error against Pillow over the pixels opaque in both, as measured: 0.0 where
    /// the output is the source's own size (hopper and its orientations, anim_frame1, iss634 and
    /// transparent.webp for the fit kinds: the same VP8 reconstruction in libwebp 1.2.4 here and
    /// Pillow's own 1.6.0), 0.14–0.61 where both resample (flower.webp @ contact-avatar@3x the
    /// most); alpha 0.0 everywhere. Bound 2; a mirrored or wrong frame is 20 or more off (the
    /// orientation and animation tests check the comparison can tell).
    @Test("every OK WebP renders at its displayed size for three kinds, close to Pillow",
          arguments: try WebPFixtures.okRows())
    func rendersLikePillow(_ row: CorpusManifest.Row) throws {
        let source = try loadSource(row.path)
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            let rendered = try Thumbnailer().render(source, request: request)
            let shown = try #require(row.displayedSize)
            let slotSize = request.kind.pixelSize(scale: request.scale)
            let expected = ExpectedSize.of(sourceWidth: shown.0, sourceHeight: shown.1, slotWidth: slotSize.width,
                                           slotHeight: slotSize.height, fill: request.kind.mode == .fill)
            #expect(rendered.pixels.width == expected.width && rendered.pixels.height == expected.height,
                    "\(row.file) @ \(slot): \(rendered.pixels.width)x\(rendered.pixels.height), expected \(expected)")
            #expect(rendered.sourceWidth == shown.0 && rendered.sourceHeight == shown.1)
            #expect(rendered.warning == nil, "\(row.file): \(rendered.warning ?? "")")
            guard rendered.pixels.width == expected.width, rendered.pixels.height == expected.height else { continue }
            let reference = try WebPFixtures.pillowReference(row.path, width: expected.width, height: expected.height,
                                                             fill: request.kind.mode == .fill)
            try #require(reference.count == expected.width * expected.height * 4)
            let (error, compared) = WebPFixtures.opaqueColourError(rendered.pixels, reference)
            // transparent.webp is opaque in a fifth of its area.
            #expect(compared > expected.width * expected.height / 10, "\(row.file) @ \(slot): only \(compared) opaque pixels")
            #expect(error < 2, "\(row.file) @ \(slot): mean abs error \(error) vs Pillow over \(compared) pixels")
            if request.kind.mask == .none {
                let alpha = WebPFixtures.alphaError(rendered.pixels, reference)
                #expect(alpha < 1, "\(row.file) @ \(slot): alpha error \(alpha) vs Pillow")
            }
        }
    }

    @Test("EXIF orientation 2-8 shows the same upright picture as hopper.webp, and the test can tell a wrong one",
          arguments: 2...8)
    func orientation(_ orientation: Int) throws {
        let path = Paths.corpusFile("formats/webp", "pillow__hopper_orientation_\(orientation).webp")
        let loader = try WebPLoader(source: loadSource(path), limits: ImageLimits())
        #expect(loader.orientation.rawValue == orientation)
        let request = try Sample.request("large", format: .png)
        let upright = try Thumbnailer().render(loadSource(path), request: request).pixels
        let reference = try Thumbnailer().render(loadSource(Paths.corpusFile("formats/webp", "pillow__hopper.webp")),
                                                 request: request).pixels
        try #require(upright.width == reference.width && upright.height == reference.height)
        let error = Pixels.meanAbsoluteError(upright.bytes, channelsA: upright.channels, reference.bytes, channelsB: reference.channels)
        #expect(error < 4, "orientation \(orientation): \(error) from hopper.webp")
        var stored = request
        stored.appliesOrientation = false
        let unrotated = try Thumbnailer().render(loadSource(path), request: stored).pixels
        let wrong = Pixels.meanAbsoluteError(unrotated.bytes, channelsA: unrotated.channels, reference.bytes, channelsB: reference.channels)
        #expect(wrong > 20, "orientation \(orientation) ignored differs by only \(wrong)")
    }

    @Test("the EXIF chunk is read with and without JPEG's Exif\\0\\0 prefix")
    func exifWithoutPrefix() throws {
        // flower2.webp's EXIF chunk starts at the TIFF header ("MM\0*"); hopper's with "Exif\0\0".
        let flower2 = try WebPLoader(source: loadSource(Paths.corpusFile("formats/webp", "pillow__flower2.webp")), limits: ImageLimits())
        let pillow = try Python.run("""
            import sys
            from PIL import Image
            print(Image.open(sys.argv[1]).getexif().get(274, 1))
            """, [Paths.corpusFile("formats/webp", "pillow__flower2.webp")])
        let expected = Int(String(decoding: pillow, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(flower2.orientation.rawValue == expected, "flower2: \(flower2.orientation), Pillow says \(String(describing: expected))")
        // The same chunk with the prefix put in front must read the same, and a lone prefix nothing.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Paths.corpusFile("formats/webp", "pillow__hopper_orientation_6.webp"))))
        #expect(try WebPLoader(source: SourceBytes(bytes), limits: ImageLimits()).orientation == .right)
        let exif = try #require(Self.find("EXIF", in: bytes))
        // Replace "Exif\0\0" by six bytes that are no TIFF header: the orientation must go.
        bytes.replaceSubrange(exif..<(exif + 6), with: Array("XXXXXX".utf8))
        #expect(try WebPLoader(source: SourceBytes(bytes), limits: ImageLimits()).orientation == .up)
    }

    /// Offset of the payload of the first chunk `fourCC` (after its 8-byte header).
    static func find(_ fourCC: String, in bytes: [UInt8]) -> Int? {
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            if String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self) == fourCC { return offset + 8 }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    @Test("an animation renders its first frame: Pillow's frame 0, not a later one")
    func animationFirstFrame() throws {
        let path = Paths.corpusFile("formats/webp", "pillow__iss634.webp")
        let loader = try WebPLoader(source: loadSource(path), limits: ImageLimits())
        #expect(loader.isAnimation && loader.storedWidth == 245 && loader.storedHeight == 245)
        let frame = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        try #require(frame.width == 245 && frame.height == 245)
        let script = """
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1])
            im.seek(int(sys.argv[2]))
            sys.stdout.buffer.write(im.convert('RGBA').tobytes())
            """
        let first = [UInt8](try Python.run(script, [path, "0"]))
        // Frame 21: the frames of this animation differ little (frame 1 by 3.5 on average where it
        // differs at all), frame 21 by 11 in 12642 pixels.
        let second = [UInt8](try Python.run(script, [path, "21"]))
        try #require(first.count == 245 * 245 * 4 && second.count == first.count)
        // Compare where the two differ (and over the whole frame).
        var changed: [Int] = []
        for pixel in 0..<(245 * 245) where first[(pixel * 4)..<(pixel * 4 + 4)] != second[(pixel * 4)..<(pixel * 4 + 4)] {
            changed.append(pixel)
        }
        try #require(changed.count > 100, "frames 0 and 21 differ in \(changed.count) pixels")
        func error(_ reference: [UInt8], _ pixels: [Int]) -> Double {
            var sum = 0
            for pixel in pixels {
                for channel in 0..<4 {
                    let ours = channel < frame.channels ? Int(frame.bytes[pixel * frame.channels + channel]) : 255
                    sum += abs(ours - Int(reference[pixel * 4 + channel]))
                }
            }
            return Double(sum) / Double(pixels.count * 4)
        }
        let everywhere = error(first, Array(0..<(245 * 245)))
        let toFirst = error(first, changed), toSecond = error(second, changed)
        #expect(everywhere < 0.5, "first frame differs from Pillow's frame 0 by \(everywhere)")
        #expect(toFirst < 0.5 && toSecond > 5,
                "where frames 0 and 21 differ (\(changed.count) pixels): \(toFirst) from frame 0, \(toSecond) from frame 21")
    }

    @Test("an animation whose first frame is smaller than the canvas shows it on a transparent canvas, as Pillow does")
    func offsetFirstFrame() throws {
        // A 33x17 lossless frame at (8, 10) of a 64x48 canvas, written here: Pillow's writer
        // always makes the first frame cover the canvas.
        var frame = PixelBuffer(width: 33, height: 17, channels: 4)
        for pixel in 0..<(33 * 17) {
            frame.bytes[pixel * 4] = UInt8(pixel % 33 * 7)
            frame.bytes[pixel * 4 + 1] = UInt8(pixel / 33 * 15)
            frame.bytes[pixel * 4 + 2] = 200
            frame.bytes[pixel * 4 + 3] = pixel % 5 == 0 ? 128 : 255
        }
        var lossless = EncoderSettings()
        lossless.webpMode = .lossless
        let still = try WebPEncoder.encode(frame, settings: lossless, isCancelled: nil)
        let vp8l = Array(still[12...])
        func le24(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16)] }
        let anmf = le24(8 / 2) + le24(10 / 2) + le24(33 - 1) + le24(17 - 1) + le24(100) + [0] + vp8l
        let bytes = WebPFailureTests.riff(WebPFailureTests.chunk("VP8X", [0x12, 0, 0, 0] + le24(63) + le24(47))
                                          + WebPFailureTests.chunk("ANIM", [0, 0, 0, 0, 0, 0]) + WebPFailureTests.chunk("ANMF", anmf))
        let path = try Self.write(bytes)
        let loader = try WebPLoader(source: SourceBytes(bytes), limits: ImageLimits())
        #expect(loader.isAnimation && loader.frameRect == .init(x: 8, y: 10, width: 33, height: 17))
        // No scaling for a frame that does not cover the canvas, whatever the plan allows.
        #expect(loader.loadedSize(maxShrink: 4) == (64, 48))
        let decoded = try loader.load(maxShrink: 4, isCancelled: nil).pixels
        let pillow = [UInt8](try Python.run("""
            import sys
            from PIL import Image
            sys.stdout.buffer.write(Image.open(sys.argv[1]).convert('RGBA').tobytes())
            """, [path]))
        #expect(decoded.width == 64 && decoded.height == 48 && decoded.channels == 4)
        let differing = zip(decoded.bytes, pillow).filter { $0 != $1 }.count
        #expect(pillow.count == decoded.bytes.count && differing == 0, "\(differing) bytes differ from Pillow's composited first frame")
        #expect(decoded.bytes[3] == 0 && decoded.bytes[((10 * 64) + 8) * 4 + 3] == 128, "canvas corner and frame corner")
    }

    @Test("transparent.webp keeps its transparency, and WebP output keeps it too")
    func transparency() throws {
        let path = Paths.corpusFile("formats/webp", "pillow__transparent.webp")
        let rendered = try Thumbnailer().render(loadSource(path), request: Sample.request("large")).pixels
        #expect(rendered.channels == 4 && rendered.hasTransparency)
        let reference = try WebPFixtures.pillowReference(path, width: rendered.width, height: rendered.height, fill: false)
        let alpha = WebPFixtures.alphaError(rendered, reference)
        let clear = (0..<(rendered.width * rendered.height)).filter { rendered.bytes[$0 * 4 + 3] == 0 }.count
        #expect(alpha < 1 && clear > 100, "alpha error \(alpha) vs Pillow, \(clear) clear pixels")
        for format in [EncoderSettings.Format.auto, .webp] {
            let thumbnail = try Thumbnailer().thumbnail(of: loadSource(path), request: Sample.request("large", format: format))
            #expect(thumbnail.format == (format == .auto ? .png : .webp))
            let mode = try Python.run("""
                import sys
                from PIL import Image
                im = Image.open(sys.argv[1])
                print(im.mode, im.getextrema()[3][0])
                """, [try Self.write(thumbnail.bytes)])
            #expect(String(decoding: mode, as: UTF8.self).hasPrefix("RGBA 0"), "\(format): \(String(decoding: mode, as: UTF8.self))")
        }
    }

    static func write(_ bytes: [UInt8]) throws -> String {
        let url = WebPFixtures.folder.appendingPathComponent("out-\(UUID()).img")
        try Data(bytes).write(to: url)
        return url.path
    }

    @Test("flower2.webp's ICCP chunk reaches the frame as Pillow reads it")
    func iccProfile() throws {
        let path = Paths.corpusFile("formats/webp", "pillow__flower2.webp")
        let loader = try WebPLoader(source: loadSource(path), limits: ImageLimits())
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        let pillowICC = try Python.run("""
            import sys
            from PIL import Image
            sys.stdout.buffer.write(Image.open(sys.argv[1]).info.get('icc_profile', b''))
            """, [path])
        #expect(frame.iccProfile?.count == 3144 && frame.iccProfile == [UInt8](pillowICC))
        #expect(ColorProfileTransform.shared(profile: frame.iccProfile ?? [], layout: .rgb) != nil, "lcms cannot use the profile")
        let plain = try WebPLoader(source: loadSource(Paths.corpusFile("formats/webp", "pillow__hopper.webp")), limits: ImageLimits())
        #expect(try plain.load(maxShrink: 1, isCancelled: nil).iccProfile == nil)
    }

    @Test("a Display P3 WebP (ICCP chunk) is converted to sRGB, as Pillow's ImageCms does")
    func wideGamut() throws {
        // flower2's profile is sRGB itself: make a WebP whose profile matters from the P3 PNG.
        let path = WebPFixtures.folder.appendingPathComponent("p3-ring.webp").path
        _ = try Python.run("""
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1])
            im.convert('RGB').save(sys.argv[2], 'WEBP', lossless=True, icc_profile=im.info['icc_profile'])
            """, [ColorTests.p3Path, path])
        let image = try Thumbnailer().render(loadSource(path), request: Sample.request("large", format: .png)).pixels
        let data = try [UInt8](Python.run(ColorTests.wideGamutScript, [path, "\(image.width)", "\(image.height)"]))
        let size = image.width * image.height * 3
        try #require(data.count == 3 * size)
        let raw = Array(data[(2 * size)...])
        let saturated = (0..<(image.width * image.height)).filter { pixel in
            let rgb = raw[(pixel * 3)..<(pixel * 3 + 3)]
            return Int(rgb.max()!) - Int(rgb.min()!) > 128
        }
        try #require(saturated.count > 100)
        func error(_ reference: ArraySlice<UInt8>) -> Double {
            var sum = 0
            for pixel in saturated {
                for c in 0..<3 { sum += abs(Int(image.bytes[pixel * image.channels + c]) - Int(reference[reference.startIndex + pixel * 3 + c])) }
            }
            return Double(sum) / Double(saturated.count * 3)
        }
        let converted = min(error(data[0..<size]), error(data[size..<(2 * size)]))
        let passedThrough = error(data[(2 * size)...])
        #expect(converted < 6 && passedThrough > 3 * max(converted, 2),
                "P3 WebP: \(converted) from Pillow's sRGB conversion, \(passedThrough) from the unconverted pixels")
    }
}
