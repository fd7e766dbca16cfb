import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Placeholders computed from the decode itself, judged against independent references: Pillow's
/// own ≤ 100 px shrink of the displayed (EXIF-transposed) image, hashed by `ThumbHash.encode`
/// (bit-identical to the PyPI port, `ThumbHashTests`), and the PyPI port's decoder rendering our
/// hashes back to pixels.
@Suite struct PlaceholderTests {
    static let sources = [
        "libjpeg-turbo-testimages/testorig.jpg", "exif-samples/Canon_40D.jpg", "large-photos/exif-samples__hdr_iphone_hdr_YES.jpg",
        "libpng-testpngs/rgb-8.png", "libpng-testpngs/rgb-alpha-8.png", "libpng-testpngs/rgb-16.png",
        "formats/webp/pillow__flower.webp", "formats/gif/pillow__hopper.gif",
    ] + (1...8).flatMap { ["exif-orientation/Landscape_\($0).jpg", "exif-orientation/Portrait_\($0).jpg"] }

    /// What Python says of one source: Pillow's shrink and the two hashes decoded back.
    struct Judgement {
        var source: String
        /// Mean absolute difference (0–255, RGBA) between our hash and the reference hash, both
        /// decoded by the PyPI decoder.
        var hashDifference: Double
        /// The same between our hash decoded and Pillow's shrink resized to the decoded size, and
        /// between the reference hash decoded and that shrink (what ThumbHash itself loses).
        var sourceDifference: Double
        var referenceSourceDifference: Double
        var ourAspect: Double
        var referenceAspect: Double
        /// Pillow's shrink's alpha-weighted mean colour and mean alpha.
        var referenceAverage: [Int]
    }

    static func placeholder(of path: String) throws -> Placeholder {
        let request = try Sample.request("product-row@2x")
        let set = try Thumbnailer().thumbnailSet(of: try loadSource(Paths.corpus + "/" + path), requests: [request],
                                                 placeholder: .always)
        return try #require(set.placeholder, "\(path): no placeholder")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Runs both Python steps for `sources`: the shrinks, then the comparisons.
    static func judge(_ sources: [String]) throws -> [Judgement] {
        let scratchDirectory = try ScratchDirectory("placeholder")
        defer { scratchDirectory.remove() }
        let scratch = scratchDirectory.path
        let shrink = """
            import sys
            from PIL import Image, ImageOps
            out = sys.argv[1]
            for index, path in enumerate(sys.argv[2:]):
                image = ImageOps.exif_transpose(Image.open(path)).convert("RGBA")
                image.thumbnail((100, 100))
                open(f"{out}/{index}.rgba", "wb").write(image.tobytes())
                print(index, image.width, image.height)
            """
        let lines = String(decoding: try Python.run(shrink, [scratch] + sources.map { Paths.corpus + "/" + $0 }), as: UTF8.self)
            .split(separator: "\n")
        try #require(lines.count == sources.count)
        var pairs: [String] = []
        for (index, line) in lines.enumerated() {
            let fields = line.split(separator: " ")
            let width = try #require(Int(fields[1])), height = try #require(Int(fields[2]))
            let rgba = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(scratch)/\(index).rgba")))
            let reference = try ThumbHash.encode(width: width, height: height, rgba: rgba)
            pairs.append("\(hex(try placeholder(of: sources[index]).thumbHash)):\(hex(reference)):\(width):\(height)")
        }
        let compare = """
            import sys
            from PIL import Image
            import thumbhash
            out = sys.argv[1]
            def decoded(h):
                w, h2, rgba = thumbhash.thumb_hash_to_rgba(list(bytes.fromhex(h)))
                return w, h2, list(rgba)
            def mad(a, b):
                return sum(abs(x - y) for x, y in zip(a, b)) / len(a)
            for index, pair in enumerate(sys.argv[2:]):
                ours, ref, width, height = pair.split(":")
                ow, oh, orgba = decoded(ours)
                rw, rh, rrgba = decoded(ref)
                hash_difference = mad(orgba, list(Image.frombytes("RGBA", (rw, rh), bytes(rrgba)).resize((ow, oh), Image.BILINEAR).tobytes())) if (ow, oh) != (rw, rh) else mad(orgba, rrgba)
                source = Image.frombytes("RGBA", (int(width), int(height)), open(f"{out}/{index}.rgba", "rb").read())
                source_difference = mad(orgba, list(source.resize((ow, oh), Image.BILINEAR).tobytes()))
                reference_source_difference = mad(rrgba, list(source.resize((rw, rh), Image.BILINEAR).tobytes()))
                pixels = list(source.getdata())
                alpha = sum(p[3] for p in pixels)
                average = [round(sum(p[c] * p[3] for p in pixels) / alpha) if alpha else 0 for c in range(3)] + [round(alpha / len(pixels))]
                print("R", hash_difference, source_difference, reference_source_difference,
                      thumbhash.thumb_hash_to_approximate_aspect_ratio(list(bytes.fromhex(ours))),
                      thumbhash.thumb_hash_to_approximate_aspect_ratio(list(bytes.fromhex(ref))), *average)
            """
        // The port prints stray lines of its own: ours are marked.
        let results = String(decoding: try Python.run(compare, [scratch] + pairs), as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("R ") }.map { $0.dropFirst(2) }
        try #require(results.count == sources.count)
        return try zip(sources, results).map { source, line in
            let f = line.split(separator: " ").map(String.init)
            return Judgement(source: source, hashDifference: try #require(Double(f[0])), sourceDifference: try #require(Double(f[1])),
                             referenceSourceDifference: try #require(Double(f[2])),
                             ourAspect: try #require(Double(f[3])), referenceAspect: try #require(Double(f[4])),
                             referenceAverage: try f[5...8].map { try #require(Int($0)) })
        }
    }

    @Test("the decode's placeholder is the hash of an independent ≤ 100 px shrink, within tolerance; its decode renders close to the source")
    func matchesAnIndependentShrink() throws {
        let judgements = try Self.judge(Self.sources)
        for judgement in judgements {
            let placeholder = try Self.placeholder(of: judgement.source)
            print("placeholder \(judgement.source): hash Δ \(judgement.hashDifference), source Δ \(judgement.sourceDifference) "
                  + "(reference's \(judgement.referenceSourceDifference)), aspect \(judgement.ourAspect) / \(judgement.referenceAspect), "
                  + "average \(placeholder.averageColorHex) / \(judgement.referenceAverage)")
            // The decoder's 1/8-scaled frame is not Pillow's full decode: a level of the header's
            // coarse quantisation (the luminance AC scale is 5 bits) can flip, which rescales every
            // AC term (the 12 MP iPhone photo: Δ 29). So each image is held loosely, the set tightly.
            #expect(judgement.hashDifference <= 32, "\(judgement.source): decoded hashes differ by \(judgement.hashDifference)")
            #expect(judgement.sourceDifference <= judgement.referenceSourceDifference + 25,
                    "\(judgement.source): our hash renders \(judgement.sourceDifference) from the source, the reference's \(judgement.referenceSourceDifference)")
            #expect(abs(judgement.ourAspect - judgement.referenceAspect) <= 0.15 * judgement.referenceAspect, "\(judgement.source)")
            let ours = [placeholder.averageRed, placeholder.averageGreen, placeholder.averageBlue, placeholder.averageAlpha].map(Int.init)
            for (channel, (mine, theirs)) in zip(ours, judgement.referenceAverage).enumerated() {
                #expect(abs(mine - theirs) <= 4, "\(judgement.source) channel \(channel): \(mine) vs \(theirs)")
            }
            #expect(placeholder.thumbHash.count <= ThumbHash.maxBytes)
        }
        let count = Double(judgements.count)
        let meanHash = judgements.map(\.hashDifference).reduce(0, +) / count
        let meanSource = judgements.map(\.sourceDifference).reduce(0, +) / count
        let meanReference = judgements.map(\.referenceSourceDifference).reduce(0, +) / count
        print("placeholder mean: hash Δ \(meanHash), source Δ \(meanSource) (reference's \(meanReference))")
        #expect(meanHash <= 6, "mean difference of the decoded hashes \(meanHash)")
        #expect(meanSource <= meanReference + 2, "ours render \(meanSource) from the sources on average, the reference's \(meanReference)")
    }

    @Test("a PNG with transparency gives a hash with alpha and a translucent average; an opaque one neither")
    func alphaImagesKeepAlpha() throws {
        let alpha = try Self.placeholder(of: "libpng-testpngs/rgb-alpha-8.png")
        #expect(alpha.thumbHash[2] & 0x80 != 0, "hasAlpha bit")
        #expect(alpha.averageAlpha < 250)
        let opaque = try Self.placeholder(of: "libpng-testpngs/rgb-8.png")
        #expect(opaque.thumbHash[2] & 0x80 == 0)
        #expect(opaque.averageAlpha == 255)
    }

    @Test("EXIF-rotated JPEGs give the displayed aspect ratio: every Portrait_N is portrait, every Landscape_N landscape")
    func rotatedJPEGsKeepTheDisplayedAspect() throws {
        for index in 1...8 {
            // The landscape bit of the header (byte 4, bit 7): set for landscape images only.
            let landscape = try Self.placeholder(of: "exif-orientation/Landscape_\(index).jpg")
            let portrait = try Self.placeholder(of: "exif-orientation/Portrait_\(index).jpg")
            #expect(landscape.thumbHash[4] & 0x80 != 0, "Landscape_\(index)")
            #expect(portrait.thumbHash[4] & 0x80 == 0, "Portrait_\(index)")
        }
        // Every orientation of one picture shows the same image: the same placeholder, near enough.
        let upright = try Self.placeholder(of: "exif-orientation/Landscape_1.jpg")
        for index in 2...8 {
            let turned = try Self.placeholder(of: "exif-orientation/Landscape_\(index).jpg")
            #expect(abs(Int(turned.averageRed) - Int(upright.averageRed)) <= 3, "Landscape_\(index)")
            #expect(turned.thumbHash.prefix(5) == upright.thumbHash.prefix(5) || Self.nearlyEqual(turned, upright), "Landscape_\(index)")
        }
    }

    static func nearlyEqual(_ a: Placeholder, _ b: Placeholder) -> Bool {
        zip(a.thumbHash, b.thumbHash).allSatisfy { (x: UInt8, y: UInt8) -> Bool in
            let low = abs(Int(x & 15) - Int(y & 15))
            let high = abs(Int(x >> 4) - Int(y >> 4))
            return low <= 2 && high <= 2
        }
    }

    @Test("asking for the placeholder leaves the thumbnails as they were; not asking gives none")
    func placeholderDoesNotChangeThumbnails() throws {
        let requests = [try Sample.request("contact-avatar@2x"), try Sample.request("large")]
        for path in ["libjpeg-turbo-testimages/testorig.jpg", "exif-orientation/Portrait_6.jpg", "pngsuite/basn6a08.png",
                     "formats/webp/pillow__flower.webp"] {
            let source = try loadSource(Paths.corpus + "/" + path)
            let with = try Thumbnailer().thumbnailSet(of: source, requests: requests, placeholder: .always)
            let without = try Thumbnailer().thumbnailSet(of: source, requests: requests, placeholder: .skip)
            #expect(with.placeholder != nil && without.placeholder == nil, "\(path)")
            for (a, b) in zip(with.thumbnails, without.thumbnails) {
                #expect(a.width == b.width && a.height == b.height, "\(path)")
                #expect(a.bytes == b.bytes, "\(path): \(a.width)x\(a.height) differs with the placeholder's full-width decode")
            }
        }
    }
}
