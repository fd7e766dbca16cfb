import Foundation
import Testing
import ThumbImaging

/// A loader's reduced frame must map back onto the stored image at its true scale: HEIF reduces
/// by an integer block factor whose last block is partial, and taking `stored / frame` as the
/// scale (4032 / 404 for a factor of 10) shifted a small avatar's crop by a fraction of a pixel,
/// a mean error of 4.6 against Pillow (0.8 at the true scale).
@Suite("Frame loaders: the reduced frame's scale")
struct FrameScaleTests {
    /// A 12-MP photo of the corpus (4032x3024) saved as HEIC by pillow-heif, and Pillow's
    /// Lanczos rendering of its centre crop at `width`×`height`.
    static func heicAndReference(width: Int, height: Int) throws -> (path: String, reference: [UInt8]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-scale-\(UUID()).heic").path
        let script = """
            import sys
            from PIL import Image, ImageOps
            import pillow_heif
            pillow_heif.register_heif_opener()
            im = ImageOps.exif_transpose(Image.open(sys.argv[1])).convert('RGB')
            im.save(sys.argv[2], format='HEIF', quality=90)
            im = Image.open(sys.argv[2]).convert('RGB')
            W, H = im.size
            w, h = int(sys.argv[3]), int(sys.argv[4])
            s = max(w / W, h / H)
            box = ((W - w / s) / 2, (H - h / s) / 2, (W + w / s) / 2, (H + h / s) / 2)
            sys.stdout.buffer.write(im.resize((w, h), Image.LANCZOS, box=box).tobytes())
            """
        let photo = Paths.corpusFile("large-photos", "exif-samples__tests_42_IndexError.jpg")
        let reference = [UInt8](try Python.run(script, [photo, path, "\(width)", "\(height)"]))
        return (path, reference)
    }

    @Test("a filled avatar from a HEIC whose width the block factor does not divide matches Pillow",
          arguments: [(144, 144), (100, 75)])
    func avatarFromPartialBlocks(_ width: Int, _ height: Int) throws {
        let (path, reference) = try Self.heicAndReference(width: width, height: height)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try #require(reference.count == width * height * 3)
        let kind = SlotKind(name: "test", widthPoints: Double(width), heightPoints: Double(height), mode: .fill)
        let rendered = try Thumbnailer().render(try loadSource(path), request: ThumbnailRequest(kind: kind, scale: 1))
        try #require(rendered.pixels.width == width && rendered.pixels.height == height)
        let error = Pixels.meanAbsoluteError(rendered.pixels.bytes, channelsA: rendered.pixels.channels, reference, channelsB: 3)
        #expect(error < 2, "\(width)x\(height): mean abs error \(error) against Pillow")
    }
}
