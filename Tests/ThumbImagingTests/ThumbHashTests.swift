import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// ThumbHash against an independent port of the reference encoder: the `thumbhash` package on
/// PyPI (installed by `scripts/install-deps --test`). Its alpha path is broken (0.1.2 binds
/// `encode_channel(a, 5, 5) if has_alpha else 1.0, [], 1.0` as a 3-tuple and raises), so it
/// judges opaque images; the alpha layout is checked by its own test below.
@Suite struct ThumbHashTests {
    /// Real images of the corpus, of both formats and many shapes.
    static let sources = [
        "exif-orientation/Landscape_1.jpg", "exif-orientation/Portrait_6.jpg", "libjpeg-turbo-testimages/testorig.jpg",
        "exif-samples/Canon_40D.jpg", "pngsuite/basn2c08.png", "pngsuite/basn6a08.png", "pngsuite/basn0g08.png",
        "pngsuite/s01n3p01.png", "pngsuite/s09n3p02.png", "pngsuite/s39i3p04.png",
    ]

    @Test("bit-identical to the PyPI port of the reference on real opaque images, shrunk to 100 px by Pillow")
    func matchesTheIndependentEncoder() throws {
        let scratchDirectory = try ScratchDirectory("thumbhash")
        defer { scratchDirectory.remove() }
        let scratch = scratchDirectory.path
        let script = """
            import sys
            from PIL import Image
            import thumbhash
            out = sys.argv[1]
            for index, path in enumerate(sys.argv[2:]):
                image = Image.open(path).convert("RGB")
                image.thumbnail((100, 100))
                image = image.convert("RGBA")
                data = image.tobytes()
                open(f"{out}/{index}.rgba", "wb").write(data)
                hash = thumbhash.rgba_to_thumb_hash(image.width, image.height, list(data))
                print(index, image.width, image.height, bytes(hash).hex())
            """
        let paths = Self.sources.map { Paths.corpus + "/" + $0 }
        let lines = String(decoding: try Python.run(script, [scratch] + paths), as: UTF8.self).split(separator: "\n")
        try #require(lines.count == Self.sources.count, "oracle answered \(lines.count) of \(Self.sources.count)")
        for line in lines {
            let fields = line.split(separator: " ")
            let index = try #require(Int(fields[0])), width = try #require(Int(fields[1])), height = try #require(Int(fields[2]))
            let rgba = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(scratch)/\(index).rgba")))
            let hash = try ThumbHash.encode(width: width, height: height, rgba: rgba)
            #expect(hash.map { String(format: "%02x", $0) }.joined() == String(fields[3]), "\(Self.sources[index]) \(width)x\(height)")
        }
    }

    @Test("alpha: the header says so and the alpha byte follows it (DC 0.5 rounds half up); an opaque image has neither")
    func alphaLayout() throws {
        // Left half opaque red, right half transparent.
        var rgba: [UInt8] = []
        for _ in 0..<20 { for x in 0..<40 { rgba += x < 20 ? [255, 0, 0, 255] : [0, 0, 255, 0] } }
        let hash = try ThumbHash.encode(width: 40, height: 20, rgba: rgba)
        #expect(hash[2] & 0x80 != 0, "hasAlpha bit")
        #expect(hash[4] & 0x80 != 0, "landscape bit")
        #expect(hash[5] & 0x0F == 8, "alpha DC 0.5 → round(7.5) = 8 (half up)")
        #expect(hash.count <= 25)
        let opaque = try ThumbHash.encode(width: 40, height: 20, rgba: (0..<800).flatMap { _ in [10, 200, 30, 255] as [UInt8] })
        #expect(opaque[2] & 0x80 == 0 && opaque.count < hash.count)
    }

    @Test("sizes and buffers outside the encoder's range are errors, never traps")
    func badInputIsAnError() {
        #expect(throws: ThumbHash.Failure.badSize(width: 0, height: 10)) { try ThumbHash.encode(width: 0, height: 10, rgba: []) }
        #expect(throws: ThumbHash.Failure.badSize(width: 101, height: 1)) { try ThumbHash.encode(width: 101, height: 1, rgba: []) }
        #expect(throws: ThumbHash.Failure.badBuffer(bytes: 3, expected: 4)) { try ThumbHash.encode(width: 1, height: 1, rgba: [1, 2, 3]) }
        #expect(throws: ThumbHash.Failure.badSize(width: Int.max, height: Int.max)) {
            try ThumbHash.encode(width: Int.max, height: Int.max, rgba: [])
        }
    }
}
