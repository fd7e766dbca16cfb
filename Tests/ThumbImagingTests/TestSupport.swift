import Foundation
import Testing
import ThumbTestSupport
import ThumbConfiguration
import ThumbImaging

/// Paths, the corpus manifest, and the expected-size rule, shared by the test files.
enum Paths {
    static let packageRoot = TestPaths.packageRoot
    static let corpus = TestPaths.corpus

    static let sampleConfig = packageRoot + "/Samples/thumbd.json"

    static func corpusFile(_ set: String, _ file: String) -> String { "\(corpus)/\(set)/\(file)" }
}

/// The imaging tests' view of a corpus manifest row.
extension CorpusManifest.Row {
    /// EXIF orientation as Pillow read it (`orient=N`), 1 when absent.
    var orientation: Int {
        guard let range = pillowInfo.range(of: "orient=") else { return 1 }
        return Int(pillowInfo[range.upperBound...].prefix(while: \.isNumber)) ?? 1
    }

    /// The EXIF orientation the expect column names ("EXIF orientation 6", formats-manifest.tsv:
    /// for AVIF, Pillow's plugin turns `irot`/`imir` into one), 1 when none.
    var exifOrientation: Int {
        guard let range = expect.range(of: "EXIF orientation ") else { return 1 }
        return Int(expect[range.upperBound...].prefix(while: \.isNumber)) ?? 1
    }

    /// The bytes are a WebP, GIF, HEIF or AVIF, whatever the name says.
    var isOtherFormatByContent: Bool {
        guard let source = try? loadSource(path), let format = source.format else { return false }
        return format != .jpeg && format != .png
    }
}

/// The selections of `manifest.tsv` (JPEG and PNG) that the imaging tests walk.
enum Manifest {
    static func with(status: String) throws -> [CorpusManifest.Row] { try CorpusManifest.jpegAndPNG().filter { $0.status == status } }

    /// ERROR rows that thumbd must refuse: the manifest judges JPEG and PNG decoders, and a few
    /// of its ERROR files are another format under a .jpg name (a HEIC saved as heic_hdlr_box.jpg),
    /// which thumbd reads by content.
    static func mustFail() throws -> [CorpusManifest.Row] { try with(status: "ERROR").filter { !$0.isOtherFormatByContent } }
    static func otherFormatsByContent() throws -> [CorpusManifest.Row] { try with(status: "ERROR").filter(\.isOtherFormatByContent) }
}

/// The no-upscaling geometry rule, computed independently of `ThumbnailGeometry`.
enum ExpectedSize {
    static func of(sourceWidth sw: Int, sourceHeight sh: Int, slotWidth tw: Int, slotHeight th: Int,
                   fill: Bool) -> (width: Int, height: Int) {
        let (sw, sh, tw, th) = (Double(sw), Double(sh), Double(tw), Double(th))
        if fill {
            if sw >= tw && sh >= th { return (Int(tw), Int(th)) }
            let shrink = min(sw / tw, sh / th)
            return (max(1, Int((tw * shrink).rounded())), max(1, Int((th * shrink).rounded())))
        }
        let scale = min(tw / sw, th / sh, 1)
        return (max(1, min(Int(tw), Int((sw * scale).rounded()))), max(1, min(Int(th), Int((sh * scale).rounded()))))
    }
}

/// The sample config, loaded once.
enum Sample {
    static let config: ThumbConfig? = try? ThumbConfig.load(path: Paths.sampleConfig)

    /// `crop`: the tests that compare with a reference cropped at the centre (Pillow's) ask for
    /// that crop whatever the sample config says (its masked kinds crop by attention or focus).
    static func request(_ slot: String, format: EncoderSettings.Format = .auto,
                        appliesOrientation: Bool = true, crop: SlotKind.CropMode = .centre) throws -> ThumbnailRequest {
        let config = try #require(config, "cannot load \(Paths.sampleConfig)")
        let selection = try config.catalog.resolve(slot)
        var encoder = EncoderSettings()
        encoder.format = format
        var kind = selection.kind
        if kind.mode == .fill { kind.crop = crop }
        return ThumbnailRequest(kind: kind, scale: selection.scale ?? selection.kind.scales[0],
                                encoder: encoder, appliesOrientation: appliesOrientation)
    }
}

/// Reads a corpus (or any) file into `SourceBytes`.
func loadSource(_ path: String) throws -> SourceBytes {
    try SourceBytes.read(path: path, maxBytes: 1 << 30)
}

// MARK: - Pixel comparison

enum Pixels {
    /// Mean absolute difference over the RGB channels of two same-size images, 0–255.
    static func meanAbsoluteError(_ a: [UInt8], channelsA: Int, _ b: [UInt8], channelsB: Int) -> Double {
        let count = min(a.count / channelsA, b.count / channelsB)
        guard count > 0 else { return .infinity }
        var sum = 0
        for pixel in 0..<count {
            for channel in 0..<3 {
                sum += abs(Int(a[pixel * channelsA + channel]) - Int(b[pixel * channelsB + channel]))
            }
        }
        return Double(sum) / Double(count * 3)
    }

    static func rgb(_ buffer: PixelBuffer, x: Int, y: Int) -> (r: Int, g: Int, b: Int, a: Int) {
        let at = (y * buffer.width + x) * buffer.channels
        let alpha = buffer.channels == 4 ? Int(buffer.bytes[at + 3]) : 255
        return (Int(buffer.bytes[at]), Int(buffer.bytes[at + 1]), Int(buffer.bytes[at + 2]), alpha)
    }
}

// MARK: - Python (Pillow) reference computations

enum Python {
    /// Runs `python3 -c script args...`; returns stdout. Fails loudly when python3 or Pillow is
    /// missing, or when the script runs past `timeout` seconds.
    static func run(_ script: String, _ arguments: [String] = [], timeout: Double = 600) throws -> Data {
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run("/usr/bin/env", ["python3", "-c", script] + arguments, timeout: timeout)
        } catch {
            throw TestFailure("python3 is required for reference images (install python3, Pillow, numpy): \(error)")
        }
        guard result.exitCode == 0 else {
            throw TestFailure("python3 failed (is Pillow/numpy installed? `pip install pillow numpy`): \(result.summary)")
        }
        return result.stdoutData
    }

    /// Pillow's `Image.open(path).convert(mode).resize((w, h), LANCZOS)` as raw bytes.
    static func pillowResized(_ path: String, width: Int, height: Int, mode: String = "RGB",
                              transpose: Bool = false) throws -> [UInt8] {
        let script = """
            import sys
            from PIL import Image, ImageOps
            im = Image.open(sys.argv[1])
            if sys.argv[5] == '1': im = ImageOps.exif_transpose(im)
            im = im.convert(sys.argv[4]).resize((int(sys.argv[2]), int(sys.argv[3])), Image.LANCZOS)
            sys.stdout.buffer.write(im.tobytes())
            """
        return [UInt8](try run(script, [path, "\(width)", "\(height)", mode, transpose ? "1" : "0"]))
    }

    /// Size of an encoded image as Pillow sees it, after a full load.
    static func pillowSize(of bytes: [UInt8]) throws -> (width: Int, height: Int, format: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-test-\(UUID()).img")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import sys
            from PIL import Image
            im = Image.open(sys.argv[1]); im.load()
            print(im.size[0], im.size[1], im.format)
            """
        let words = String(decoding: try run(script, [file.path]), as: UTF8.self).split(separator: " ")
        guard words.count == 3, let w = Int(words[0]), let h = Int(words[1]) else {
            throw TestFailure("unexpected Pillow output: \(words)")
        }
        return (w, h, words[2].trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

// MARK: - Building PNGs in tests

enum PNGBuilder {
    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        return b << 16 | a
    }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc32(body))
    }

    /// A zlib stream of stored (uncompressed) deflate blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65535, data.count - offset)
            let final: UInt8 = offset + length >= data.count ? 1 : 0
            out += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        return out + be32(adler32(data))
    }

    /// A PNG with the given IHDR fields and raw scanlines (filter byte 0 is added per row).
    static func png(width: UInt32, height: UInt32, bitDepth: UInt8, colorType: UInt8, rows: [[UInt8]],
                    extraChunks: [[UInt8]] = []) -> [UInt8] {
        let ihdr = be32(width) + be32(height) + [bitDepth, colorType, 0, 0, 0]
        var raw = [UInt8]()
        for row in rows { raw.append(0); raw += row }
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", ihdr)
        for extra in extraChunks { out += extra }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }
}
