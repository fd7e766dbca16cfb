import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The `tiff` rows of `formats-next-manifest.tsv` through the thumbnailer: OK files render at
/// their displayed size with the pixels of a reference decode, EITHER files render as well or
/// are refused with an `ImagingError`, ERROR files are refused quickly and within memory.
@Suite("TIFF: the formats-next corpus")
struct TIFFTests {
    /// Reference decodes, straight RGBA at the displayed size, one Python run for all files:
    /// Pillow (the corpus's TIFF decoder) where it decodes, else `vips thumbnail` at the same
    /// size (no resampling then). Pillow's float page (mode F) is taken as 0–1, 16-bit integers
    /// scaled to 8 bits, its premultiplied modes (RGBa, La) divided out, and signed 8-bit grey
    /// (which Pillow reads as unsigned L) offset by 128: the conventions thumbd follows (see
    /// `TIFFLoader.floatToRGB8` and `signedToRGB8`). An 8-bit planar striped file without a
    /// predictor (None or PackBits) is read plane by plane by the script itself: Pillow 13 reads
    /// the alpha plane of minisblack-2c-8b-alpha.tiff as all 0 and libvips 8.14 mixes its planes
    /// into stripes. No reference for a CMYK file that only
    /// libvips decodes: libvips converts CMYK through a built-in profile, thumbd (as Pillow, and
    /// as thumbd's CMYK JPEGs) without one.
    static let references: [String: (pixels: [UInt8], by: String)] = {
        let script = """
            import sys, subprocess, numpy as np
            from PIL import Image, ImageOps
            folder = sys.argv[1]
            def unpackbits(data):
                out, i = bytearray(), 0
                while i < len(data):
                    n = data[i] - 256 if data[i] > 127 else data[i]; i += 1
                    if n >= 0: out += data[i:i + n + 1]; i += n + 1
                    elif n != -128: out += bytes([data[i]]) * (1 - n); i += 1
                return bytes(out)
            def planes(im, tags, path):
                data = open(path, 'rb').read()
                width, height = im.size
                perPlane = -(-height // tags.get(278, height))
                strips = [data[o:o + c] for o, c in zip(tags[273], tags[279])]
                if tags.get(259, 1) == 32773: strips = [unpackbits(s) for s in strips]
                return np.dstack([np.frombuffer(b''.join(strips[p * perPlane:(p + 1) * perPlane])[:width * height], np.uint8)
                                  .reshape(height, width) for p in range(tags[277])]).astype(np.float64)
            for index, spec in enumerate(sys.argv[2:]):
                path, width, height, separated = spec.split('|')
                try:
                    im = Image.open(path); im.load(); tags = im.tag_v2; im = ImageOps.exif_transpose(im)
                    mode, values = im.mode, None
                    if tags.get(284) == 2 and tags.get(258, (8,))[0] == 8 and tags.get(259, 1) in (1, 32773) \\
                            and 322 not in tags and tags.get(317, 1) == 1 and mode in ('La', 'LA'):
                        values = planes(im, tags, path)
                        mode = 'La' if tags.get(338) in (1, (1,)) else 'LA'
                    if mode == 'L' and tags.get(339) in (2, (2,)):
                        grey = (np.asarray(im) ^ 0x80).astype(np.float64)
                        rgba = np.dstack([grey, grey, grey, np.full(grey.shape, 255.0)])
                    elif mode == 'F':
                        grey = np.clip(np.nan_to_num(np.asarray(im, dtype=np.float64)), 0, 1) * 255
                        rgba = np.dstack([grey, grey, grey, np.full(grey.shape, 255.0)])
                    elif mode.startswith('I'):
                        grey = np.asarray(im).astype(np.float64) / 257
                        rgba = np.dstack([grey, grey, grey, np.full(grey.shape, 255.0)])
                    elif mode in ('La', 'RGBa'):
                        values = np.asarray(im).astype(np.float64) if values is None else values
                        alpha = values[..., -1:]
                        colour = np.where(alpha > 0, values[..., :-1] * 255 / np.maximum(alpha, 1), 0)
                        if colour.shape[-1] == 1: colour = np.repeat(colour, 3, axis=-1)
                        rgba = np.concatenate([np.clip(colour, 0, 255), alpha], axis=-1)
                    elif values is not None:
                        rgba = np.dstack([values[..., 0]] * 3 + [values[..., 1]])
                    else:
                        rgba = np.asarray(im.convert('RGBA')).astype(np.float64)
                    by = 'Pillow'
                except Exception:
                    if separated == '1': continue
                    out = folder + '/vips-%d.png' % index
                    if subprocess.run(['vips', 'thumbnail', path, out, width, '--height', height, '--size', 'force']).returncode != 0:
                        continue
                    rgba = np.asarray(Image.open(out).convert('RGBA')).astype(np.float64)
                    by = 'libvips'
                open(folder + '/ref-%d.rgba' % index, 'wb').write(np.round(rgba).astype(np.uint8).tobytes())
                print(index, by)
            """
        guard let rows = try? TIFFManifestRow.all().filter({ $0.status != "ERROR" }), let scratch = try? ScratchDirectory("tiff-references") else { return [:] }
        defer { scratch.remove() }
        let specs = rows.compactMap { row in
            row.displayed.map { "\(row.path)|\($0.width)|\($0.height)|\(row.detail.contains("separated") ? 1 : 0)" }
        }
        guard let output = try? Python.run(script, [scratch.path] + specs) else { return [:] }
        var references: [String: (pixels: [UInt8], by: String)] = [:]
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 2, let index = Int(words[0]), index < rows.count,
                  let data = FileManager.default.contents(atPath: scratch.path("ref-\(index).rgba")) else { continue }
            references[rows[index].file] = ([UInt8](data), String(words[1]))
        }
        return references
    }()

    /// Mean absolute difference, 0–255, over premultiplied R, G, B and alpha: a pixel's colour
    /// counts as much as it shows (a 16-bit file's colour under alpha 1/255 has no 8-bit value).
    /// Measured on this corpus: 0.00 for every OK file but three: a 16-bit grey (0.43: Pillow's
    /// I;16 divided by 257, libtiff keeps the high byte) and the 16-bit premultiplied RGBa files
    /// (about 0.1). The CIELab one goes through lcms, as Pillow's conversion does.
    static func premultipliedError(_ pixels: PixelBuffer, _ reference: [UInt8]) -> Double {
        let count = pixels.width * pixels.height
        guard reference.count == count * 4 else { return .infinity }
        var sum = 0
        for pixel in 0..<count {
            let ours = Pixels.rgb(pixels, x: pixel % pixels.width, y: pixel / pixels.width)
            let alpha = Int(reference[pixel * 4 + 3])
            sum += abs(ours.r * ours.a - Int(reference[pixel * 4]) * alpha) / 255
            sum += abs(ours.g * ours.a - Int(reference[pixel * 4 + 1]) * alpha) / 255
            sum += abs(ours.b * ours.a - Int(reference[pixel * 4 + 2]) * alpha) / 255
            sum += abs(ours.a - alpha)
        }
        return Double(sum) / Double(count * 4)
    }

    /// Above rounding (under 0.5 measured) and well under what a wrong picture costs: an upside
    /// down or red/blue-swapped copy of these files is 10–60 off (checked for each file below).
    static let bound = 2.0

    @Test func manifestHasTheTIFFSet() throws {
        let rows = try TIFFManifestRow.all()
        #expect(rows.count == 25)
        #expect(rows.filter { $0.status == "OK" }.count == 14)
        #expect(Self.references.count >= 16, "reference decodes: \(Self.references.keys.sorted())")
    }

    @Test("OK and EITHER files render at their displayed size, like the reference decode",
          arguments: try TIFFManifestRow.all().filter { $0.status != "ERROR" })
    func rendersLikeTheReference(_ row: TIFFManifestRow) throws {
        let shown = try #require(row.displayed, "\(row.file) has no dims")
        let source = try loadSource(row.path)
        #expect(source.format == .tiff)
        let image: RenderedImage
        do {
            image = try Thumbnailer().render(source, request: TIFFTestSupport.request(width: shown.width, height: shown.height))
        } catch let error as ImagingError {
            #expect(row.status == "EITHER", "\(row.file): \(error)")
            return
        }
        #expect(image.pixels.width == shown.width && image.pixels.height == shown.height,
                "\(row.file): \(image.pixels.width)x\(image.pixels.height), displayed \(shown.width)x\(shown.height)")
        #expect(image.sourceWidth == shown.width && image.sourceHeight == shown.height)
        guard let reference = Self.references[row.file] else {
            #expect(row.status == "EITHER" && row.detail.contains("separated"), "\(row.file): no reference decode")
            return
        }
        let bound = Self.bound
        let error = Self.premultipliedError(image.pixels, reference.pixels)
        #expect(error < bound, "\(row.file): \(error) off \(reference.by)'s decode")
        // The bound tells a wrong picture from the right one wherever the picture is not its
        // own mirror image: upside down, and red and blue swapped.
        // EXIF's 4: the picture mirrored top to bottom.
        let flipped = Orientation.downMirrored.apply(to: image.pixels)
        let referenceImage = PixelBuffer(width: shown.width, height: shown.height, channels: 4, bytes: reference.pixels)
        let referenceFlipped = Orientation.downMirrored.apply(to: referenceImage)
        if Self.premultipliedError(referenceFlipped, reference.pixels) > 2 * bound {
            #expect(Self.premultipliedError(flipped, reference.pixels) > bound, "\(row.file): upside down passes too")
        }
        var swapped = image.pixels
        for pixel in 0..<(swapped.width * swapped.height) { swapped.bytes.swapAt(pixel * swapped.channels, pixel * swapped.channels + 2) }
        var referenceSwapped = referenceImage
        for pixel in 0..<(shown.width * shown.height) { referenceSwapped.bytes.swapAt(pixel * 4, pixel * 4 + 2) }
        if Self.premultipliedError(referenceSwapped, reference.pixels) > 2 * bound {
            #expect(Self.premultipliedError(swapped, reference.pixels) > bound, "\(row.file): red and blue swapped passes too")
        }
    }

    @Test("ERROR files: refused with a reason, quickly", arguments: try TIFFManifestRow.with(status: "ERROR"))
    func refused(_ row: TIFFManifestRow) throws {
        let source = try loadSource(row.path)
        let clock = ContinuousClock()
        let started = clock.now
        #expect {
            _ = try Thumbnailer().render(source, request: Sample.request("large"))
        } throws: { error in
            guard let error = error as? ImagingError else { return false }
            return error.description.contains("TIFF")
        }
        #expect(clock.now - started < .seconds(2), "\(row.file)")
    }

    @Test("ERROR files under the real CLI, sandboxed: exit 65, one line, small and quick",
          arguments: try TIFFManifestRow.with(status: "ERROR"))
    func refusedBySandboxedCLI(_ row: TIFFManifestRow) throws {
        let thumbd = try requireThumbd()
        let scratch = try ScratchDirectory("tiff-error")
        defer { scratch.remove() }
        let result = try MeasuredChild.run(thumbd, ["render", row.path, "--config", Paths.sampleConfig, "--out-dir", scratch.path,
                                                    "--slot", "large", "--sandbox"])
        #expect(result.exitCode == 65, "\(row.file): \(result.summary)")
        #expect(result.stderrLines.filter { $0.hasPrefix("thumbd: \(row.path): ") }.count == 1, "\(row.file): \(result.stderrLines)")
        #expect(result.cpuSeconds < 2 && result.maxRSSBytes < 200 << 20,
                "\(row.file): \(result.cpuSeconds) s CPU, \(result.maxRSSBytes >> 20) MB")
    }

    @Test("OK files render in the sandboxed worker too (no syscall of libtiff's is refused)")
    func rendersInTheSandbox() throws {
        let thumbd = try requireThumbd()
        let scratch = try ScratchDirectory("tiff-sandbox")
        defer { scratch.remove() }
        let rows = try TIFFManifestRow.with(status: "OK")
        let result = try MeasuredChild.run(thumbd, ["render"] + rows.map(\.path)
                                           + ["--config", Paths.sampleConfig, "--out-dir", scratch.path, "--slot", "large", "--sandbox"])
        #expect(result.exitCode == 0, "\(result.summary)")
        #expect(result.stdout.split(separator: "\n").count == rows.count, "\(result.stdout)")
    }

    @Test("Orientation 6: stored 88x590, displayed 590x88, turned after resampling")
    func orientationTag() throws {
        let row = try #require(try TIFFManifestRow.all().first { $0.file == "pillow__g4_orientation_6.tif" })
        let loader = try TIFFLoader(source: loadSource(row.path), limits: ImageLimits())
        #expect(loader.storedWidth == 88 && loader.storedHeight == 590)
        #expect(loader.orientation == .right)
        let image = try Thumbnailer().render(loadSource(row.path), request: Sample.request("large"))
        #expect(image.pixels.width > image.pixels.height * 6, "\(image.pixels.width)x\(image.pixels.height)")
        #expect((image.sourceWidth, image.sourceHeight) == (590, 88))
    }

    @Test func sniffsEveryTIFFHeader() {
        func sniff(_ bytes: [UInt8]) -> SourceFormat? { bytes.withUnsafeBytes { SourceFormat.sniff($0) } }
        #expect(sniff(Array("II".utf8) + [42, 0, 8, 0, 0, 0]) == .tiff)
        #expect(sniff(Array("MM".utf8) + [0, 42, 0, 0, 0, 8]) == .tiff)
        #expect(sniff(Array("II".utf8) + [43, 0, 8, 0, 0, 0]) == .tiff)
        #expect(sniff(Array("MM".utf8) + [0, 43, 0, 8, 0, 0]) == .tiff)
        #expect(sniff(Array("II".utf8) + [42, 1]) == nil)
        #expect(sniff(Array("MM".utf8) + [42, 0]) == nil)
        #expect(SourceFormat.tiff.name == "TIFF")
    }
}
