import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging

/// Colour: CMYK/YCCK JPEGs come out as Pillow converts them; wide-gamut PNGs are converted to sRGB
/// through their ICC profile, not passed through.
@Suite("Colour conversion")
struct ColorTests {
    /// The CMYK and YCCK JPEGs of the manifest (decoder_detail `cs=cmyk` / `cs=ycck`).
    static func cmykFiles() throws -> [CorpusManifest.Row] {
        try CorpusManifest.jpegAndPNG().filter { $0.status == "OK" && ($0.detail.contains("cs=cmyk") || $0.detail.contains("cs=ycck")) }
    }

    /// Pillow's reference for a CMYK file at `width`×`height`: through the embedded ICC profile to
    /// sRGB when there is one (what a colour-managed viewer shows), else Pillow's `convert('RGB')`.
    static let cmykReferenceScript = """
        import sys, io
        from PIL import Image, ImageCms
        path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        im = Image.open(path)
        icc = im.info.get('icc_profile')
        naive = im.convert('RGB')
        if icc:
            src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
            managed = ImageCms.profileToProfile(im, src, ImageCms.createProfile('sRGB'), renderingIntent=0, outputMode='RGB')
        else:
            managed = naive
        for out in (managed, naive):
            sys.stdout.buffer.write(out.resize((w, h), Image.LANCZOS).tobytes())
        """

    @Test("the corpus has CMYK and YCCK JPEGs")
    func corpusHasCMYK() throws {
        #expect(try Self.cmykFiles().contains { $0.detail.contains("cs=cmyk") })
        #expect(try Self.cmykFiles().contains { $0.detail.contains("cs=ycck") })
    }

    @Test("CMYK/YCCK JPEGs match Pillow's conversion", arguments: try cmykFiles())
    func cmyk(_ entry: CorpusManifest.Row) throws {
        let image = try Thumbnailer().render(loadSource(entry.path), request: Sample.request("large", format: .png)).pixels
        let data = try [UInt8](Python.run(Self.cmykReferenceScript, [entry.path, "\(image.width)", "\(image.height)"]))
        let size = image.width * image.height * 3
        try #require(data.count == 2 * size, "Pillow returned \(data.count) bytes, expected \(2 * size)")
        let managed = Array(data[0..<size]), naive = Array(data[size...])
        let error = Pixels.meanAbsoluteError(image.bytes, channelsA: image.channels, managed, channelsB: 3)
        let naiveError = Pixels.meanAbsoluteError(image.bytes, channelsA: image.channels, naive, channelsB: 3)
        #expect(error < 6, "\(entry.file) (\(entry.detail)): mean abs error \(error) vs Pillow (naive conversion: \(naiveError))")
    }

    static let p3Path = Paths.corpusFile("edge-cases", "libjxl-testdata/external/wide-gamut-tests/P3-sRGB-color-ring.png")
    static let rec2020Path = Paths.corpusFile("edge-cases", "libjxl-testdata/external/wide-gamut-tests/R2020-sRGB-color-bars.png")

    /// Pillow: the file's pixels through its ICC profile to sRGB (perceptual, relative colorimetric)
    /// and unconverted, each resized to w×h, RGB.
    static let wideGamutScript = """
        import sys, io
        from PIL import Image, ImageCms
        path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        im = Image.open(path)
        src = ImageCms.ImageCmsProfile(io.BytesIO(im.info['icc_profile']))
        rgb = im.convert('RGB')
        outs = [ImageCms.profileToProfile(rgb, src, ImageCms.createProfile('sRGB'), renderingIntent=i, outputMode='RGB')
                for i in (0, 1)] + [rgb]
        for out in outs:
            sys.stdout.buffer.write(out.resize((w, h), Image.LANCZOS).tobytes())
        """

    @Test("wide-gamut PNGs are converted to sRGB through their ICC profile", arguments: [p3Path, rec2020Path])
    func wideGamut(_ path: String) throws {
        let rendered = try Thumbnailer().render(loadSource(path), request: Sample.request("large", format: .png))
        let image = rendered.pixels
        let data = try [UInt8](Python.run(Self.wideGamutScript, [path, "\(image.width)", "\(image.height)"]))
        let size = image.width * image.height * 3
        try #require(data.count == 3 * size, "Pillow returned \(data.count) bytes")
        let perceptual = Array(data[0..<size]), relative = Array(data[size..<(2 * size)]), raw = Array(data[(2 * size)...])

        // Saturated pixels of the unconverted image: where the conversion matters.
        var saturated = [Int]()
        for pixel in 0..<(image.width * image.height) {
            let rgb = raw[(pixel * 3)..<(pixel * 3 + 3)]
            if Int(rgb.max()!) - Int(rgb.min()!) > 128 { saturated.append(pixel) }
        }
        try #require(saturated.count > 100, "no saturated region found in \(path)")
        func error(_ reference: [UInt8]) -> Double {
            var sum = 0
            for pixel in saturated {
                for c in 0..<3 {
                    sum += abs(Int(image.bytes[pixel * image.channels + c]) - Int(reference[pixel * 3 + c]))
                }
            }
            return Double(sum) / Double(saturated.count * 3)
        }
        let converted = min(error(perceptual), error(relative))
        let passedThrough = error(raw)
        let name = (path as NSString).lastPathComponent
        let detail = "(vs the unconverted pixels: \(passedThrough)); warning: \(rendered.warning ?? "none")"
        #expect(converted < 6, "\(name): mean abs error \(converted) vs Pillow's ImageCms sRGB conversion \(detail)")
        #expect(passedThrough > 3 * max(converted, 2),
                "\(name): output is as close to the unconverted pixels (\(passedThrough)) as to the converted ones (\(converted))")
    }

    @Test("an sRGB JPEG without a profile is passed through unchanged in colour")
    func plainSRGB() throws {
        let path = Paths.corpusFile("edge-cases", "pillow/pil_sample_rgb.jpg")
        let image = try Thumbnailer().render(loadSource(path), request: Sample.request("large", format: .png)).pixels
        let reference = try Python.pillowResized(path, width: image.width, height: image.height)
        let error = Pixels.meanAbsoluteError(image.bytes, channelsA: image.channels, reference, channelsB: 3)
        #expect(error < 3, "pil_sample_rgb.jpg: mean abs error \(error) vs Pillow")
    }
}
