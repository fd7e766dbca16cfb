import Foundation
import Testing
import ThumbImaging

/// PNG details: 16-bit samples keep their brightness, Adam7 interlacing gives the same pixels,
/// palette and gray types come out as RGB(A).
@Suite("PNG specifics")
struct PNGSpecificsTests {
    static func render(_ source: SourceBytes, spec: String = "256x256") throws -> PixelBuffer {
        let selection = try SlotSpec.parse(spec)
        return try Thumbnailer().render(source, request: ThumbnailRequest(kind: selection.kind, scale: 1)).pixels
    }

    static func maxDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Int {
        guard a.width == b.width, a.height == b.height, a.channels == b.channels else { return .max }
        return zip(a.bytes, b.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
    }

    /// A 256x8 gradient: column v has value v (8-bit) or v·257 + `low` (16-bit), for gray (type 0)
    /// or RGB (type 2, blue reversed). No gAMA chunk.
    static func gradient(bits: Int, colorType: UInt8, low: Int = 0) -> SourceBytes {
        let row = (0..<256).flatMap { v -> [UInt8] in
            let samples = colorType == 0 ? [v] : [v, v / 2, 255 - v]
            return samples.flatMap { s -> [UInt8] in
                let wide = min(65535, s * 257 + low)
                return bits == 8 ? [UInt8(s)] : [UInt8(wide >> 8), UInt8(wide & 0xFF)]
            }
        }
        return SourceBytes(PNGBuilder.png(width: 256, height: 8, bitDepth: UInt8(bits), colorType: colorType,
                                          rows: [[UInt8]](repeating: row, count: 8)))
    }

    @Test("a 16-bit PNG without gAMA renders as bright as its 8-bit equivalent", arguments: [UInt8(0), 2], [0, 100])
    func sixteenBit(_ colorType: UInt8, _ low: Int) throws {
        let eight = try Self.render(Self.gradient(bits: 8, colorType: colorType))
        let sixteen = try Self.render(Self.gradient(bits: 16, colorType: colorType, low: low))
        #expect(eight.width == 256 && eight.height == 8)
        let difference = Self.maxDifference(eight, sixteen)
        let rows = "8-bit row: \(Array(eight.bytes.prefix(24))), 16-bit row: \(Array(sixteen.bytes.prefix(24)))"
        #expect(difference <= 1, "colour type \(colorType), low bits \(low): max difference \(difference) (\(rows))")
        // And the 8-bit one is the gradient itself (no gamma applied without gAMA).
        for v in [0, 64, 128, 200, 255] {
            let p = Pixels.rgb(eight, x: v, y: 4)
            #expect(abs(p.r - v) <= 1, "column \(v): red \(p.r)")
        }
    }

    @Test("a 16-bit shrink keeps the mean brightness of the 8-bit one")
    func sixteenBitShrunk() throws {
        let eight = try Self.render(Self.gradient(bits: 8, colorType: 2), spec: "64x2")
        let sixteen = try Self.render(Self.gradient(bits: 16, colorType: 2, low: 100), spec: "64x2")
        let difference = Self.maxDifference(eight, sixteen)
        #expect(difference <= 2, "max difference \(difference) after shrinking")
    }

    static let interlacedPairs = ["0g01", "0g02", "0g04", "0g08", "0g16", "2c08", "2c16", "3p01", "3p02", "3p04", "3p08",
                                  "4a08", "4a16", "6a08", "6a16"]

    @Test("an Adam7-interlaced PNG equals its non-interlaced pair", arguments: interlacedPairs)
    func interlaced(_ suffix: String) throws {
        for spec in ["256x256", "20x20", "48x48,fill,circle"] {
            let plain = try Self.render(loadSource(Paths.corpusFile("pngsuite", "basn\(suffix).png")), spec: spec)
            let interlaced = try Self.render(loadSource(Paths.corpusFile("pngsuite", "basi\(suffix).png")), spec: spec)
            let difference = Self.maxDifference(plain, interlaced)
            let sizes = "\(plain.width)x\(plain.height)x\(plain.channels) vs \(interlaced.width)x\(interlaced.height)x\(interlaced.channels)"
            #expect(difference <= 2, "basi\(suffix) vs basn\(suffix) at \(spec): max difference \(difference) (\(sizes))")
        }
    }

    @Test("an interlaced corpus PNG matches Pillow with its gAMA applied")
    func interlacedAgainstPillow() throws {
        let path = Paths.corpusFile("pngsuite", "basi2c08.png")
        let image = try Self.render(loadSource(path))
        // pngsuite carries gAMA 1.0; gamma-correct Pillow's pixels like libpng does for sRGB output.
        let script = """
            import sys
            import numpy as np
            from PIL import Image
            im = Image.open(sys.argv[1]); g = im.info.get('gamma', 1 / 2.2)
            a = np.asarray(im.convert('RGB')).astype(np.float64) / 255
            sys.stdout.buffer.write(np.round(a ** (1 / (g * 2.2)) * 255).astype(np.uint8).tobytes())
            """
        let reference = try [UInt8](Python.run(script, [path]))
        try #require(image.width == 32 && image.height == 32 && reference.count == 32 * 32 * 3)
        let error = Pixels.meanAbsoluteError(image.bytes, channelsA: image.channels, reference, channelsB: 3)
        #expect(error < 2, "basi2c08: mean abs error \(error) vs Pillow with gamma applied")
    }

    @Test("palette, gray and gray+alpha PNGs come out as RGB or RGBA", arguments: [
        ("basn3p08.png", 3), ("basn0g08.png", 3), ("basn4a08.png", 4), ("basn6a08.png", 4), ("tbrn2c08.png", 4),
    ])
    func channelLayout(_ file: String, _ channels: Int) throws {
        let image = try Self.render(loadSource(Paths.corpusFile("pngsuite", file)))
        #expect(image.channels == channels, "\(file): \(image.channels) channels")
        #expect(image.width == 32 && image.height == 32)
    }
}
