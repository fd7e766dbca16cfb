import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging

/// The rows of `formats-manifest.tsv` (WebP, GIF, HEIF, AVIF) by status, and Pillow's sizes.
enum FormatsManifest {
    static func with(status: String) throws -> [CorpusManifest.Row] { try CorpusManifest.otherFormats().filter { $0.status == status } }

    /// Each OK file's displayed size as Pillow shows it (pillow-heif for HEIF; Pillow's AVIF
    /// plugin turns irot/imir into an orientation that `exif_transpose` applies), one Python run.
    static let displayedSizes: [String: (width: Int, height: Int)] = {
        let script = """
            import sys
            from PIL import Image, ImageOps
            import pillow_heif
            pillow_heif.register_heif_opener()
            Image.MAX_IMAGE_PIXELS = None  # the 200-MP HEIC is a real phone photo
            for path in sys.argv[1:]:
                im = ImageOps.exif_transpose(Image.open(path))
                print(path, im.size[0], im.size[1])
            """
        guard let rows = try? with(status: "OK"), let data = try? Python.run(script, rows.map(\.path)) else { return [:] }
        var sizes: [String: (width: Int, height: Int)] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 3, let width = Int(words[words.count - 2]), let height = Int(words[words.count - 1]) else { continue }
            sizes[words.dropLast(2).joined(separator: " ")] = (width, height)
        }
        return sizes
    }()
}

/// `formats-manifest.tsv` through the real `thumbd render --sandbox` (the decoders run in the
/// sandboxed workers, as under `serve`): OK files render for three kinds at the size of their
/// displayed orientation; ERROR files exit 65 with one line naming the file, leave nothing, and
/// stay small and quick. Each format's tests (WebP, GIF, HEIF) compare the pixels with Pillow.
@Suite("Formats manifest walk (WebP, GIF, HEIF, AVIF)")
struct FormatsManifestWalkTests {
    static let kinds = ["contact-avatar@3x", "product-grid@3x", "large"]
    static let maxRSSBytes = 200 << 20

    @Test func manifestIsThere() throws {
        #expect(try CorpusManifest.otherFormats().count == 66)
        #expect(try FormatsManifest.with(status: "ERROR").count >= 4)
        let ok = try FormatsManifest.with(status: "OK")
        #expect(FormatsManifest.displayedSizes.count == ok.count,
                "Pillow (with pillow-heif) sized \(FormatsManifest.displayedSizes.count) files")
    }

    @Test("OK files render for three kinds at their displayed orientation's size", arguments: try FormatsManifest.with(status: "OK"))
    func okFile(_ entry: CorpusManifest.Row) throws {
        let shown = try #require(FormatsManifest.displayedSizes[entry.path], "Pillow gave no size for \(entry.file)")
        let result = try FormatsNextWalkTests.render(entry, sandbox: true).result
        try #require(result.exitCode == 0, "\(entry.file): \(result.summary)")
        try FormatsNextWalkTests.expectSizes(entry, result, shown: shown)
    }

    @Test("ERROR files: exit 65, one line naming the file, nothing left, under 2 s and 200 MB",
          arguments: try FormatsManifest.with(status: "ERROR"))
    func errorFile(_ entry: CorpusManifest.Row) throws {
        for sandbox in [true, false] {
            try FormatsNextWalkTests.expectRefusal(entry, try FormatsNextWalkTests.render(entry, sandbox: sandbox))
        }
    }
}
