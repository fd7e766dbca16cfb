import Foundation
import Testing
import ThumbImaging

/// Resampling of images with alpha must be premultiplied: colour hidden under alpha 0 must not
/// bleed into the visible edge pixels (no green or dark fringe around opaque red).
@Suite("Alpha resampling")
struct AlphaTests {
    /// `size`×`size` RGBA: opaque red for x < split, `hidden` colour at alpha 0 beyond.
    static func hardEdge(size: Int, split: Int, hidden: (UInt8, UInt8, UInt8)) -> SourceBytes {
        let row = (0..<size).flatMap { x -> [UInt8] in x < split ? [255, 0, 0, 255] : [hidden.0, hidden.1, hidden.2, 0] }
        return SourceBytes(PNGBuilder.png(width: UInt32(size), height: UInt32(size), bitDepth: 8, colorType: 6,
                                          rows: [[UInt8]](repeating: row, count: size)))
    }

    static let hiddenColours: [(String, UInt8, UInt8, UInt8)] = [("green", 0, 255, 0), ("black", 0, 0, 0),
                                                                  ("white", 255, 255, 255)]

    @Test("a hard red/transparent edge stays red after shrinking", arguments: hiddenColours, ["50x50,fit", "37x37,fit", "48x48@3x,fill"])
    func hardEdgeStaysRed(_ hidden: (String, UInt8, UInt8, UInt8), _ spec: String) throws {
        let source = Self.hardEdge(size: 403, split: 201, hidden: (hidden.1, hidden.2, hidden.3))
        let selection = try SlotSpec.parse(spec)
        let image = try Thumbnailer().render(source, request: ThumbnailRequest(kind: selection.kind, scale: selection.scale ?? 1)).pixels
        try #require(image.channels == 4, "alpha was dropped")
        var edgePixels = 0
        var worst = ""
        for y in 0..<image.height {
            for x in 0..<image.width {
                let p = Pixels.rgb(image, x: x, y: y)
                guard p.a >= 8 else { continue }
                if p.a < 250 { edgePixels += 1 }
                // Visible pixels are red: no green/blue mixed in, no darkening.
                if p.r < 235 || p.g > 20 || p.b > 20 {
                    worst = "(\(x), \(y)) = \(p)"
                }
            }
        }
        #expect(worst.isEmpty, "\(spec), \(hidden.0) under alpha 0: fringe pixel \(worst)")
        #expect(edgePixels > 0, "\(spec): no partially transparent edge pixels — is the edge resampled at all?")
        // Left third opaque red, right third fully transparent.
        let left = Pixels.rgb(image, x: image.width / 6, y: image.height / 2)
        let right = Pixels.rgb(image, x: image.width * 5 / 6, y: image.height / 2)
        #expect(left.a == 255 && left.r >= 250 && right.a == 0, "left \(left), right \(right)")
    }

    @Test("the encoded thumbnail of an image with transparency is a PNG with alpha")
    func encodedKeepsAlpha() throws {
        let source = Self.hardEdge(size: 403, split: 201, hidden: (0, 255, 0))
        var encoder = EncoderSettings()
        encoder.format = .auto
        let selection = try SlotSpec.parse("50x50")
        let thumbnail = try Thumbnailer().thumbnail(of: source, request: ThumbnailRequest(kind: selection.kind, scale: 1, encoder: encoder))
        #expect(thumbnail.format == .png)
        // IHDR colour type 6 (RGBA) at byte 25.
        #expect(thumbnail.bytes.count > 26 && thumbnail.bytes[25] == 6, "colour type \(thumbnail.bytes.count > 26 ? thumbnail.bytes[25] : 0)")
    }

    /// Pillow's RGBA resize is premultiplied; compare premultiplied colour and alpha.
    @Test("pngsuite RGBA images shrink like Pillow's premultiplied Lanczos",
          arguments: ["basn6a08.png", "basn4a08.png", "basn6a16.png"])
    func pngsuiteAlpha(_ file: String) throws {
        let path = Paths.corpusFile("pngsuite", file)
        let selection = try SlotSpec.parse("16x16")
        let image = try Thumbnailer().render(loadSource(path), request: ThumbnailRequest(kind: selection.kind, scale: 1)).pixels
        try #require(image.channels == 4 && image.width == 16 && image.height == 16)
        // pngsuite files carry gAMA 1.0: compare against Pillow with the same gamma applied.
        let script = """
            import sys
            import numpy as np
            from PIL import Image
            im = Image.open(sys.argv[1])
            g = im.info.get('gamma')
            im = im.convert('RGBA')
            if g:
                a = np.asarray(im).astype(np.float64) / 255
                a[..., :3] = a[..., :3] ** (1 / (g * 2.2))
                im = Image.fromarray(np.round(a * 255).astype(np.uint8), 'RGBA')
            sys.stdout.buffer.write(im.resize((16, 16), Image.LANCZOS).tobytes())
            """
        let reference = try [UInt8](Python.run(script, [path]))
        try #require(reference.count == 16 * 16 * 4)
        var colourSum = 0, alphaSum = 0
        for pixel in 0..<(16 * 16) {
            let a = Int(image.bytes[pixel * 4 + 3]), b = Int(reference[pixel * 4 + 3])
            alphaSum += abs(a - b)
            for c in 0..<3 {
                colourSum += abs(Int(image.bytes[pixel * 4 + c]) * a / 255 - Int(reference[pixel * 4 + c]) * b / 255)
            }
        }
        let colourError = Double(colourSum) / Double(16 * 16 * 3), alphaError = Double(alphaSum) / 256
        #expect(colourError < 8 && alphaError < 4,
                "\(file): premultiplied colour error \(colourError), alpha error \(alphaError) vs Pillow")
    }
}
