import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Issue 37, item 8: TIFF pages libtiff's RGBA reader gets wrong. Lab went through libtiff's own
/// conversion (the sky of hopper.Lab.tif came out 115,139,175 instead of lcms's 96,134,197), a
/// CMYK page's unassociated alpha was dropped, and signed samples were read as unsigned.
@Suite("TIFF: Lab, CMYK alpha and signed samples")
struct TIFFSampleKindsTests {
    static func file(_ name: String) -> String { TestPaths.corpusFile("formats-next/tiff/" + name) }

    /// The decode at the page's own size (no resampling), straight RGB(A).
    static func decode(_ source: SourceBytes, width: Int, height: Int) throws -> PixelBuffer {
        let pixels = try Thumbnailer().render(source, request: TIFFTestSupport.request(width: width, height: height)).pixels
        try #require(pixels.width == width && pixels.height == height, "\(pixels.width)x\(pixels.height)")
        return pixels
    }

    /// `script` (Python, given `arguments`) writes raw bytes to stdout.
    static func python(_ script: String, _ arguments: [String]) throws -> [UInt8] { [UInt8](try Python.run(script, arguments)) }

    @Test("CIELab through lcms: hopper.Lab.tif as Pillow's ImageCms (lcms, Lab D50 to sRGB) converts it")
    func labThroughLCMS() throws {
        let path = Self.file("pillow__hopper.Lab.tif")
        let pixels = try Self.decode(loadSource(path), width: 128, height: 128)
        // Pillow reads TIFF's signed a*, b* into its LAB mode (ICC's offset encoding) and
        // converts with its own lcms binding, from lcms's built-in D50 Lab profile.
        let reference = try Self.python("""
            import sys
            from PIL import Image, ImageCms
            im = Image.open(sys.argv[1])
            t = ImageCms.buildTransform(ImageCms.createProfile('LAB'), ImageCms.createProfile('sRGB'), 'LAB', 'RGB')
            sys.stdout.buffer.write(ImageCms.applyTransform(im, t).tobytes())
            """, [path])
        try #require(reference.count == 128 * 128 * 3)
        var sum = 0, worst = 0
        for pixel in 0..<(128 * 128) {
            for channel in 0..<3 {
                let difference = abs(Int(pixels.bytes[pixel * pixels.channels + channel]) - Int(reference[pixel * 3 + channel]))
                sum += difference
                worst = max(worst, difference)
            }
        }
        let mean = Double(sum) / Double(128 * 128 * 3)
        // libtiff's conversion was 14/8/17 off on average; lcms against lcms is rounding.
        #expect(mean < 0.5 && worst <= 3, "mean \(mean), worst \(worst) off Pillow's lcms conversion")
        // The sky the issue names (x 106, y 40): Lab 141,128,91 (Pillow's encoding).
        let sky = Pixels.rgb(pixels, x: 106, y: 40)
        let wanted = (Int(reference[(40 * 128 + 106) * 3]), Int(reference[(40 * 128 + 106) * 3 + 1]), Int(reference[(40 * 128 + 106) * 3 + 2]))
        #expect(abs(sky.r - wanted.0) <= 2 && abs(sky.g - wanted.1) <= 2 && abs(sky.b - wanted.2) <= 2, "sky \(sky), lcms \(wanted)")
    }

    @Test("CMYK with an unassociated alpha sample keeps its alpha (libvips' fifth band)")
    func cmykAlpha() throws {
        let path = Self.file("image-tiff__cmyk-4c-8b.tiff")
        let pixels = try Self.decode(loadSource(path), width: 157, height: 151)
        let scratch = try ScratchDirectory("tiff-cmyk-alpha")
        defer { scratch.remove() }
        let alphaFile = scratch.path("alpha.png")
        try TIFFTestSupport.run("vips", ["extract_band", path, alphaFile, "4"])
        let alpha = try Self.python("import sys\nfrom PIL import Image\nsys.stdout.buffer.write(Image.open(sys.argv[1]).convert('L').tobytes())",
                                    [alphaFile])
        try #require(alpha.count == 157 * 151)
        #expect(alpha.contains { $0 < 128 } && alpha.contains { $0 == 255 }, "the file is partly transparent")
        try #require(pixels.channels == 4, "the decode has no alpha")
        let worst = (0..<alpha.count).map { abs(Int(pixels.bytes[$0 * 4 + 3]) - Int(alpha[$0])) }.max() ?? 0
        #expect(worst <= 1, "alpha off libvips' by up to \(worst)")
    }

    @Test("8-bit signed grey (the corpus file): samples offset by 128, as libvips reads them plus the offset")
    func signedEightBitCorpus() throws {
        let path = Self.file("image-tiff__tiled-oversize-gray-i8.tif")
        let pixels = try Self.decode(loadSource(path), width: 499, height: 374)
        let scratch = try ScratchDirectory("tiff-i8")
        defer { scratch.remove() }
        // libvips reads the page as signed char (format "char"); +128 is the mapping chosen.
        let shifted = scratch.path("shifted.png")
        try TIFFTestSupport.run("vips", ["linear", path, shifted, "1", "128", "--uchar"])
        let reference = try Self.python("import sys\nfrom PIL import Image\nsys.stdout.buffer.write(Image.open(sys.argv[1]).convert('L').tobytes())",
                                        [shifted])
        try #require(reference.count == 499 * 374)
        let worst = (0..<reference.count).map { abs(Int(pixels.bytes[$0 * pixels.channels]) - Int(reference[$0])) }.max() ?? 0
        #expect(worst == 0, "off libvips' signed samples + 128 by up to \(worst)")
    }

    /// One row of `samples` (SampleFormat 2) as an uncompressed TIFF, grey or RGB, 8 or 16 bits.
    static func signedTIFF(_ samples: [Int], bits: Int, rgb: Bool, photometric: UInt32 = 1) -> [UInt8] {
        let channels = rgb ? 3 : 1
        let width = samples.count / channels
        let data: [UInt8] = samples.flatMap { value -> [UInt8] in
            bits == 8 ? [UInt8(truncatingIfNeeded: value)] : TIFFTestSupport.le16(UInt16(truncatingIfNeeded: value))
        }
        let (short, long) = (TIFFTestSupport.short, TIFFTestSupport.long)
        let entryCount = 10
        let offset = TIFFTestSupport.trailingOffset(entryCount: entryCount)
        return TIFFTestSupport.tiff([
            (256, long, 1, UInt32(width)), (257, long, 1, 1), (258, short, 1, UInt32(bits)), (259, short, 1, 1),
            (262, short, 1, rgb ? 2 : photometric), (273, long, 1, offset), (277, short, 1, UInt32(channels)),
            (278, long, 1, 1), (279, long, 1, UInt32(data.count)), (339, short, 1, 2),
        ], trailing: data)
    }

    @Test("16-bit signed grey: −3495 darker than +4213, every value in order, offset by 32768", arguments: [false, true])
    func signedSixteenBit(_ rgb: Bool) throws {
        let values = [-32768, -20000, -3495, -1, 0, 1, 4213, 20000, 32767]
        let samples = rgb ? values.flatMap { [$0, -$0 - 1, $0 / 2] } : values
        let bytes = Self.signedTIFF(samples, bits: 16, rgb: rgb)
        let scratch = try ScratchDirectory("tiff-i16")
        defer { scratch.remove() }
        // The fixture is what it claims: libvips reads the same signed values back.
        let file = scratch.path("i16.tif")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let read = try TIFFTestSupport.run("vips", ["getpoint", file, "2", "0"]).stdout
        let expectedPoint = rgb ? [-3495, 3494, -1747] : [-3495]
        #expect(read.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }.map { Int($0) } == expectedPoint,
                "vips getpoint: \(read)")
        let pixels = try Self.decode(SourceBytes(bytes), width: values.count, height: 1)
        for (index, _) in values.enumerated() {
            for channel in 0..<3 {
                let sample = rgb ? samples[index * 3 + channel] : samples[index]
                // The documented offset, then 16 to 8 bits rounded (v × 255 / 65535).
                let wanted = ((sample + 32768) * 255 + 32767) / 65535
                #expect(Int(pixels.bytes[index * pixels.channels + channel]) == wanted, "value \(sample): \(pixels.bytes[index * pixels.channels + channel]), not \(wanted)")
            }
        }
        let grey = values.indices.map { Int(pixels.bytes[$0 * pixels.channels]) }
        #expect(grey == grey.sorted() && grey.first! < grey.last!, "\(grey) is not in the samples' order")
    }

    @Test("8-bit signed: MinIsBlack in order, MinIsWhite in reverse order")
    func signedEightBitPhotometric() throws {
        let values = [-128, -100, -1, 0, 1, 100, 127]
        for photometric in [UInt32(1), 0] {
            let pixels = try Self.decode(SourceBytes(Self.signedTIFF(values, bits: 8, rgb: false, photometric: photometric)),
                                         width: values.count, height: 1)
            let grey = values.indices.map { Int(pixels.bytes[$0 * pixels.channels]) }
            let wanted = values.map { photometric == 1 ? $0 + 128 : 127 - $0 }
            #expect(grey == wanted, "photometric \(photometric): \(grey), not \(wanted)")
        }
    }
}
