import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The WebP rows of `formats-manifest.tsv`, WebP files made for the tests, and Pillow references.
enum WebPFixtures {
    /// The WebP rows of `formats-manifest.tsv` with a size (the first row of a name only).
    static func rows() throws -> [CorpusManifest.Row] {
        var seen = Set<String>()
        return try CorpusManifest.otherFormats().filter { row in
            row.set == "formats/webp" && seen.insert(row.file).inserted && row.width != nil && row.height != nil
        }
    }

    static func okRows() throws -> [CorpusManifest.Row] { try rows().filter { $0.status == "OK" } }

    /// Scratch folder of this test process.
    static let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-webp-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// The corpus photo the large test WebPs are made from (4032x3024, orientation 1).
    static let photoPath = Paths.corpusFile("large-photos", "image-rs__scaledown_test.jpg")

    /// Writes a WebP of the corpus photo with Pillow; returns its path. `arguments`: Pillow's
    /// `save` keywords as Python source.
    static func pillowWebP(_ name: String, width: Int, height: Int, mode: String = "RGB", save: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        if FileManager.default.fileExists(atPath: path) { return path }
        let script = """
            import sys
            from PIL import Image, ImageDraw
            im = Image.open(sys.argv[1]).convert('RGB').resize((int(sys.argv[3]), int(sys.argv[4])), Image.LANCZOS)
            if sys.argv[5] == 'RGBA':
                mask = Image.new('L', im.size, 0)
                ImageDraw.Draw(mask).ellipse((im.size[0] // 8, im.size[1] // 8, im.size[0] * 7 // 8, im.size[1] * 7 // 8), fill=255)
                im.putalpha(mask)
            im.save(sys.argv[6], 'WEBP', \(save))
            import os; os.rename(sys.argv[6], sys.argv[2])
            """
        // Tests run in parallel: each writes its own part file and renames it into place.
        _ = try Python.run(script, [photoPath, path, "\(width)", "\(height)", mode, path + ".\(UUID()).part"])
        return path
    }

    /// 4000x3000 lossy (q80), ~1 MB: the shrink-on-load and cancellation subject.
    static func largeLossy() throws -> String {
        try pillowWebP("large-lossy.webp", width: 4000, height: 3000, save: "quality=80, method=4")
    }

    /// 1600x1200 lossless with a transparent surround (an ellipse mask).
    static func largeLosslessAlpha() throws -> String {
        try pillowWebP("large-lossless-alpha.webp", width: 1600, height: 1200, mode: "RGBA", save: "lossless=True, method=0")
    }

    /// 2000x1500 lossy with a transparent surround.
    static func largeLossyAlpha() throws -> String {
        try pillowWebP("large-lossy-alpha.webp", width: 2000, height: 1500, mode: "RGBA", save: "quality=80, method=4")
    }

    /// Pillow's rendering of `path` for an output of `width`×`height`: EXIF-transposed, the first
    /// frame, RGBA, the centred crop of the slot's aspect ratio for a fill kind, Lanczos.
    static func pillowReference(_ path: String, width: Int, height: Int, fill: Bool) throws -> [UInt8] {
        let script = """
            import sys
            from PIL import Image, ImageOps
            im = ImageOps.exif_transpose(Image.open(sys.argv[1])).convert('RGBA')
            w, h, fill = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == '1'
            sw, sh = im.size
            box = (0, 0, sw, sh)
            if fill:
                scale = max(w / sw, h / sh)
                cw, ch = w / scale, h / scale
                box = ((sw - cw) / 2, (sh - ch) / 2, (sw + cw) / 2, (sh + ch) / 2)
            sys.stdout.buffer.write(im.resize((w, h), Image.LANCZOS, box=box).tobytes())
            """
        return [UInt8](try Python.run(script, [path, "\(width)", "\(height)", fill ? "1" : "0"]))
    }

    /// Mean absolute RGB difference over the pixels opaque in both (a mask's outside, or a
    /// source's transparency, is compared by `alphaError`), and the count compared.
    static func opaqueColourError(_ image: PixelBuffer, _ reference: [UInt8]) -> (error: Double, pixels: Int) {
        var sum = 0, count = 0
        for pixel in 0..<(image.width * image.height) {
            let alpha = image.channels == 4 ? image.bytes[pixel * 4 + 3] : 255
            guard alpha == 255, reference[pixel * 4 + 3] == 255 else { continue }
            count += 1
            for channel in 0..<3 {
                sum += abs(Int(image.bytes[pixel * image.channels + channel]) - Int(reference[pixel * 4 + channel]))
            }
        }
        return (count == 0 ? .infinity : Double(sum) / Double(count * 3), count)
    }

    /// Mean absolute alpha difference, 0–255.
    static func alphaError(_ image: PixelBuffer, _ reference: [UInt8]) -> Double {
        var sum = 0
        for pixel in 0..<(image.width * image.height) {
            let alpha = image.channels == 4 ? Int(image.bytes[pixel * 4 + 3]) : 255
            sum += abs(alpha - Int(reference[pixel * 4 + 3]))
        }
        return Double(sum) / Double(image.width * image.height)
    }

    /// Runs `body` and returns the ImagingError it threw (nil when it returned).
    static func thrown<T>(_ body: () throws(ImagingError) -> T) -> ImagingError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }
}
