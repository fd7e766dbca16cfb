import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The `jxl` rows of `formats-next-manifest.tsv` (set, file, bytes, sha256_16, format, dims,
/// status, detail, source), parsed here: its columns differ from the other manifests'.
struct JXLRow: Sendable, CustomStringConvertible {
    var set: String, file: String, dims: String, status: String, detail: String

    var path: String { TestPaths.corpusFile("formats-next/\(set)/\(file)") }
    var description: String { file }
    /// The displayed size (libjxl applies the orientation), nil for "-".
    var displayed: (width: Int, height: Int)? {
        let sides = dims.split(separator: "x").compactMap { Int($0) }
        return sides.count == 2 ? (sides[0], sides[1]) : nil
    }
    var isHDR: Bool { detail.contains("(PQ)") || detail.contains("(HLG)") }
    /// How libvips 8.14 must be given the file to render it right (`VipsReference`).
    var vipsSource: VipsReference.Source {
        detail.hasPrefix("animated") ? .firstFrame : detail.contains("premultiplied alpha") ? .unpremultiplied : .asIs
    }

    static func all() throws -> [JXLRow] {
        let path = TestPaths.corpusFile("formats-next-manifest.tsv")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = lines.removeFirst()
        func column(_ name: String) throws -> Int { try #require(header.firstIndex(of: name), "\(path) has a \(name) column") }
        let (set, file, dims, status, detail) = (try column("set"), try column("file"), try column("dims"), try column("status"),
                                                 try column("detail"))
        return lines.filter { $0.count == header.count && $0[set] == "jxl" }
            .map { JXLRow(set: $0[set], file: $0[file], dims: $0[dims], status: $0[status], detail: $0[detail]) }
    }

    static func with(status: String) throws -> [JXLRow] { try all().filter { $0.status == status } }

    static func named(_ name: String) throws -> JXLRow { try #require(try all().first { $0.file.hasSuffix(name) }, "\(name) in the manifest") }
}

/// libvips' rendering (`vips thumbnail`, forced to the size given, to sRGB), as RGB over white
/// then the alpha plane. Two files libvips 8.14 decodes wrongly go through an upright copy
/// first: an animation (8.14 shows its last frame; djxl's first frame is taken) and
/// premultiplied alpha (8.14 hands the premultiplied colour on as straight; it is divided here).
enum VipsReference {
    enum Source: String { case asIs, firstFrame, unpremultiplied }

    static func render(_ path: String, width: Int, height: Int, source: Source = .asIs) throws -> (rgb: [UInt8], alpha: [UInt8]) {
        let script = """
            import io, os, subprocess, sys, tempfile
            import numpy as np
            from PIL import Image
            path, w, h, how = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
            with tempfile.TemporaryDirectory() as folder:
                made = os.path.join(folder, 'made.png')
                if how == 'firstFrame':
                    subprocess.run(['djxl', path, made], check=True, capture_output=True)
                    first = Image.open(made); first.load(); first.save(made)
                    path = made
                elif how == 'unpremultiplied':
                    subprocess.run(['vips', 'copy', path, made], check=True)
                    im = Image.open(made); icc = im.info.get('icc_profile')
                    pixels = np.asarray(im).astype(np.float64)
                    top = 65535.0 if pixels.max() > 255 else 255.0
                    alpha = pixels[..., 3:4]
                    colour = np.where(alpha > 0, pixels[..., :3] * top / np.maximum(alpha, 1), 0)
                    straight = np.concatenate([colour, alpha], axis=2) * 255.0 / top
                    Image.fromarray(np.clip(straight + 0.5, 0, 255).astype(np.uint8), 'RGBA').save(made, icc_profile=icc)
                    path = made
                out = os.path.join(folder, 'ref.png')
                subprocess.run(['vips', 'thumbnail', path, out, w, '--height', h, '--size', 'force',
                                '--export-profile', 'srgb'], check=True)
                im = Image.open(out); im.load()
            im = im.convert('RGBA')
            flat = Image.alpha_composite(Image.new('RGBA', im.size, (255, 255, 255, 255)), im).convert('RGB')
            sys.stdout.buffer.write(flat.tobytes()); sys.stdout.buffer.write(im.getchannel('A').tobytes())
            """
        let data = [UInt8](try Python.run(script, [path, "\(width)", "\(height)", source.rawValue]))
        let count = width * height
        guard data.count == count * 4 else { throw TestFailure("vips gave \(data.count) bytes for \(width)x\(height)") }
        return (Array(data[0..<count * 3]), Array(data[count * 3..<count * 4]))
    }

    /// Mean absolute difference of thumbd's pixels (flattened over white) and the reference, and of the alpha planes.
    static func errors(_ pixels: PixelBuffer, _ reference: (rgb: [UInt8], alpha: [UInt8])) -> (color: Double, alpha: Double) {
        let color = Pixels.meanAbsoluteError(pixels.flattened().bytes, channelsA: 3, reference.rgb, channelsB: 3)
        var sum = 0
        for index in 0..<(pixels.width * pixels.height) {
            let alpha = pixels.channels == 4 ? Int(pixels.bytes[index * 4 + 3]) : 255
            sum += abs(alpha - Int(reference.alpha[index]))
        }
        return (color, Double(sum) / Double(max(1, pixels.width * pixels.height)))
    }
}

@Suite("JPEG XL corpus")
struct JXLTests {
    /// Mean absolute error bound against libvips (0–255 per channel, RGB over white and alpha).
    /// Measured (the "JXL-vs-vips" lines): at most 1.01 over the OK files (the 12x16 oss-fuzz one); a picture turned upside
    /// down, with red and blue swapped or with its alpha lost measures 15 and more on them (see
    /// `aWrongPictureFailsTheBound`; premultiplied colour left as it is measured 25 on
    /// alpha_premultiplied.jxl), so 3 keeps those out with room for resampling differences.
    static let maxMeanError = 3.0

    static func render(_ path: String, kind: String = "large") throws -> RenderedImage {
        try Thumbnailer().render(try loadSource(path), request: try Sample.request(kind))
    }

    /// A render's outcome: the typed error, for the tests of refusals.
    static func attempt(_ source: SourceBytes, kind: String = "large") throws -> Result<RenderedImage, ImagingError> {
        let request = try Sample.request(kind)
        do throws(ImagingError) { return .success(try Thumbnailer().render(source, request: request)) } catch { return .failure(error) }
    }

    @Test func manifestHasTheJXLRows() throws {
        let rows = try JXLRow.all()
        #expect(rows.count == 19, "\(rows.count) JPEG XL rows")
        #expect(try JXLRow.with(status: "ERROR").count == 4 && JXLRow.with(status: "EITHER").count == 2)
    }

    @Test("OK files render at the displayed size, close to libvips", arguments: try JXLRow.with(status: "OK").filter { !$0.isHDR })
    func okFileRendersLikeVips(_ row: JXLRow) throws {
        let shown = try #require(row.displayed)
        let image = try Self.render(row.path)
        #expect(image.sourceWidth == shown.width && image.sourceHeight == shown.height,
                "\(row.file): displayed \(image.sourceWidth)x\(image.sourceHeight), manifest says \(row.dims)")
        let expected = ExpectedSize.of(sourceWidth: shown.width, sourceHeight: shown.height, slotWidth: 256, slotHeight: 256, fill: false)
        #expect(image.pixels.width == expected.width && image.pixels.height == expected.height)
        let reference = try VipsReference.render(row.path, width: image.pixels.width, height: image.pixels.height,
                                                 source: row.vipsSource)
        let error = VipsReference.errors(image.pixels, reference)
        print("JXL-vs-vips \(row.file): mean error \(error.color), alpha \(error.alpha), warning \(image.warning ?? "none")")
        #expect(error.color < Self.maxMeanError && error.alpha < Self.maxMeanError,
                "\(row.file): mean error \(error.color) (alpha \(error.alpha)) against libvips")
    }

    /// PQ files are tone-mapped (their luminance against the reference: `HDRToneMappingTests`).
    @Test("PQ files render at the displayed size, tone-mapped without a warning", arguments: try JXLRow.with(status: "OK").filter(\.isHDR))
    func hdrFileIsToneMapped(_ row: JXLRow) throws {
        let shown = try #require(row.displayed)
        let image = try Self.render(row.path)
        #expect(image.sourceWidth == shown.width && image.sourceHeight == shown.height)
        #expect(image.warning == nil, "\(image.warning ?? "")")
    }

    @Test("EITHER files render at their size or are refused with a reason", arguments: try JXLRow.with(status: "EITHER"))
    func eitherFile(_ row: JXLRow) throws {
        switch try Self.attempt(try loadSource(row.path)) {
        case .success(let image):
            #expect(image.sourceWidth == row.displayed?.width && image.sourceHeight == row.displayed?.height)
        case .failure(let error):
            print("JXL EITHER \(row.file): \(error)")
            #expect(error != .cancelled && !error.description.isEmpty)
        }
    }

    @Test("ERROR files are refused with a reason, fast", arguments: try JXLRow.with(status: "ERROR"))
    func errorFileIsRefused(_ row: JXLRow) throws {
        let start = ContinuousClock.now
        switch try Self.attempt(try loadSource(row.path)) {
        case .success: Issue.record("\(row.file) rendered")
        case .failure(let error):
            print("JXL ERROR \(row.file): \(error)")
            switch error {
            case .undecodable(let reason), .tooLarge(let reason): #expect(reason.hasPrefix("JPEG XL") || reason.contains("limit"))
            default: Issue.record("\(row.file): \(error)")
            }
        }
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    /// The bound's power: the same comparison with the reference upside down, with red and blue
    /// swapped, or (for the alpha file) with its alpha dropped must exceed it.
    @Test func aWrongPictureFailsTheBound() throws {
        for name in ["bench_oriented_brg.jxl", "bicycles.jxl", "alpha_premultiplied.jxl", "upsampling.jxl"] {
            let row = try JXLRow.named(name)
            let image = try Self.render(row.path)
            let (width, height) = (image.pixels.width, image.pixels.height)
            let reference = try VipsReference.render(row.path, width: width, height: height, source: row.vipsSource)
            var upsideDown = reference, swapped = reference, opaque = reference
            for y in 0..<height {
                for x in 0..<width {
                    let at = y * width + x, turned = (height - 1 - y) * width + (width - 1 - x)
                    for channel in 0..<3 { upsideDown.rgb[at * 3 + channel] = reference.rgb[turned * 3 + channel] }
                    upsideDown.alpha[at] = reference.alpha[turned]
                    swapped.rgb[at * 3] = reference.rgb[at * 3 + 2]
                    swapped.rgb[at * 3 + 2] = reference.rgb[at * 3]
                    opaque.alpha[at] = 255
                }
            }
            let wrong = [("upside down", upsideDown), ("red and blue swapped", swapped)] + (image.pixels.channels == 4 ? [("alpha lost", opaque)] : [])
            for (what, picture) in wrong {
                let error = VipsReference.errors(image.pixels, picture)
                print("JXL-wrong \(name) \(what): \(error.color), alpha \(error.alpha)")
                #expect(max(error.color, error.alpha) > Self.maxMeanError, "\(name) \(what) passes: \(error)")
            }
        }
    }
}

/// libjxl under the worker's seccomp allow-list (`thumbd render --sandbox`): no SIGSYS, and an
/// OK file gives its thumbnail.
@Suite("JPEG XL in the sandbox")
struct JXLSandboxTests {
    @Test("OK and EITHER files render or are refused in a sandboxed worker", arguments: try JXLRow.all().filter { $0.status != "ERROR" })
    func decodesInSandbox(_ row: JXLRow) throws {
        let folder = try ScratchDirectory("jxl-sandbox")
        defer { folder.remove() }
        let result = try MeasuredChild.run(try requireThumbd(), ["render", row.path, "--config", Paths.sampleConfig, "--sandbox",
                                                                "--out-dir", folder.path, "--slot", "large"])
        #expect(result.signal == nil, "\(row.file): \(result.summary)")
        if row.status == "OK" {
            #expect(result.exitCode == 0 && folderContents(folder.path).count == 1, "\(row.file): \(result.summary)")
        }
    }
}
