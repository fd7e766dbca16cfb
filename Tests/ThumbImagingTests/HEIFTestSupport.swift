import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The HEIF and AVIF rows of `formats-manifest.tsv`, and Pillow's rendering of them.
extension CorpusManifest.Row {
    var isAVIF: Bool { self.set.hasSuffix("avif") }

    /// The displayed size: Pillow's size turned by the orientation (libheif gives the same by
    /// applying irot/imir itself).
    var displayedSize: (width: Int, height: Int)? {
        guard let width, let height else { return nil }
        return exifOrientation >= 5 ? (height, width) : (width, height)
    }

    /// Whether Pillow's reference must apply the EXIF orientation: yes for AVIF (its irot/imir
    /// arrive as one), except pillow__xmp_tags_orientation.avif, whose orientation 3 is a bare
    /// EXIF tag that thumbd, libvips and browsers do not apply to HEIF/AVIF (HEIFLoader's doc).
    /// pillow-heif applies a HEIF's transforms itself.
    var referenceTransposes: Bool { isAVIF && file != "pillow__xmp_tags_orientation.avif" }
}

enum HEIFCorpus {
    static func rows() throws -> [CorpusManifest.Row] {
        try CorpusManifest.otherFormats().filter { $0.set.hasSuffix("/heif") || $0.set.hasSuffix("/avif") }
    }

    static func with(status: String) throws -> [CorpusManifest.Row] { try rows().filter { $0.status == status } }

    static func file(_ name: String) throws -> CorpusManifest.Row {
        try #require(try rows().first { $0.file == name }, "\(name) is in formats-manifest.tsv")
    }
}

enum HEIFReference {
    /// Pillow's rendering (pillow-heif for HEIF, Pillow's AVIF plugin for AVIF) resized with
    /// Lanczos to each size, after the ICC profile (if any) is converted to sRGB: for each size,
    /// RGB composited over white, then the alpha channel.
    static func pillow(_ row: CorpusManifest.Row, sizes: [(width: Int, height: Int)]) throws -> [(rgb: [UInt8], alpha: [UInt8])] {
        let script = """
            import io, sys
            import pillow_heif
            from PIL import Image, ImageOps, ImageCms
            pillow_heif.register_heif_opener()
            Image.MAX_IMAGE_PIXELS = None
            im = Image.open(sys.argv[1])
            if sys.argv[2] == '1': im = ImageOps.exif_transpose(im)
            icc = im.info.get('icc_profile')
            im = im.convert('RGBA' if im.mode in ('RGBA', 'LA', 'PA') or 'transparency' in im.info else 'RGB')
            if icc:
                im = ImageCms.profileToProfile(im, ImageCms.ImageCmsProfile(io.BytesIO(icc)), ImageCms.createProfile('sRGB'),
                                               renderingIntent=0, outputMode=im.mode)
            out = sys.stdout.buffer
            sizes = sys.argv[3:]
            for i in range(0, len(sizes), 2):
                size = (int(sizes[i]), int(sizes[i + 1]))
                r = (im.convert('RGBa').resize(size, Image.LANCZOS).convert('RGBA') if im.mode == 'RGBA'
                     else im.resize(size, Image.LANCZOS).convert('RGBA'))
                flat = Image.alpha_composite(Image.new('RGBA', size, (255, 255, 255, 255)), r).convert('RGB')
                out.write(flat.tobytes()); out.write(r.getchannel('A').tobytes())
            """
        let arguments = [row.path, row.referenceTransposes ? "1" : "0"] + sizes.flatMap { ["\($0.width)", "\($0.height)"] }
        let data = [UInt8](try Python.run(script, arguments))
        var results: [(rgb: [UInt8], alpha: [UInt8])] = []
        var offset = 0
        for size in sizes {
            let count = size.width * size.height
            guard offset + count * 4 <= data.count else { throw TestFailure("short Pillow output for \(row.file)") }
            results.append((Array(data[offset..<offset + count * 3]), Array(data[offset + count * 3..<offset + count * 4])))
            offset += count * 4
        }
        return results
    }

    /// Mean absolute difference of two alpha planes, 0–255.
    static func alphaError(_ pixels: PixelBuffer, _ alpha: [UInt8]) -> Double {
        guard pixels.channels == 4, alpha.count == pixels.width * pixels.height, !alpha.isEmpty else {
            return alpha.allSatisfy { $0 == 255 } ? 0 : .infinity
        }
        var sum = 0
        for index in 0..<alpha.count { sum += abs(Int(pixels.bytes[index * 4 + 3]) - Int(alpha[index])) }
        return Double(sum) / Double(alpha.count)
    }
}

/// A HEIF loader wrapper for tests: one call to `renderFrame` through the thumbnailer's own
/// plan, keeping the loader to ask which image it decoded.
final class ObservedLoad: @unchecked Sendable {
    let loader: HEIFLoader

    init(_ path: String, limits: ImageLimits = ImageLimits()) throws {
        let source = try loadSource(path)
        let format = try #require(source.format)
        loader = try HEIFLoader(source: source, format: format, limits: limits)
    }

    func render(_ slots: [String], stopAfterChoice: Bool = false) throws -> [DecodedThumbnail] {
        let requests = try slots.map { try Sample.request($0) }
        let check: CancellationCheck? = stopAfterChoice ? { @Sendable [self] in self.loader.decodedImage != nil } : nil
        return try Thumbnailer().renderFrame(loader, requests: requests, isCancelled: check)
    }
}
