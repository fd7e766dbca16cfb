import Foundation
import Testing
import ThumbImaging

/// One row of `formats-manifest.tsv` (WebP, GIF, HEIF, AVIF).
struct FormatsManifestEntry: Sendable, CustomTestStringConvertible {
    var set: String
    var file: String
    var format: String
    var status: String
    var expect: String

    var path: String { Paths.corpus + "/" + set + "/" + file }
    var testDescription: String { "\(set)/\(file)" }

    static let entries: [FormatsManifestEntry] = {
        guard let text = try? String(contentsOfFile: Paths.corpus + "/formats-manifest.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count >= 8 else { return nil }
            return FormatsManifestEntry(set: columns[0], file: columns[1], format: columns[4], status: columns[6], expect: columns[7])
        }
    }()

    static func with(status: String) -> [FormatsManifestEntry] { entries.filter { $0.status == status } }

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
        guard let data = try? Python.run(script, with(status: "OK").map(\.path)) else { return [:] }
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

    @Test func manifestIsThere() {
        #expect(FormatsManifestEntry.entries.count == 66)
        #expect(FormatsManifestEntry.with(status: "ERROR").count >= 4)
        #expect(FormatsManifestEntry.displayedSizes.count == FormatsManifestEntry.with(status: "OK").count,
                "Pillow (with pillow-heif) sized \(FormatsManifestEntry.displayedSizes.count) files")
    }

    @Test("OK files render for three kinds at their displayed orientation's size", arguments: FormatsManifestEntry.with(status: "OK"))
    func okFile(_ entry: FormatsManifestEntry) throws {
        let thumbd = try requireThumbd()
        let shown = try #require(FormatsManifestEntry.displayedSizes[entry.path], "Pillow gave no size for \(entry.file)")
        let folder = try makeTemporaryFolder("formats")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try ChildProcess.run(thumbd, ["render", entry.path, "--config", Paths.sampleConfig, "--out-dir", folder, "--sandbox"]
                                          + Self.kinds.flatMap { ["--slot", $0] })
        try #require(result.exitCode == 0, "\(entry.file): \(result.summary)")
        let config = try #require(Sample.config)
        for slot in Self.kinds {
            let selection = try config.catalog.resolve(slot)
            let scale = selection.scale ?? selection.kind.scales[0]
            let pixels = selection.kind.pixelSize(scale: scale)
            let expected = ExpectedSize.of(sourceWidth: shown.width, sourceHeight: shown.height, slotWidth: pixels.width,
                                           slotHeight: pixels.height, fill: selection.kind.mode == .fill)
            // stdout: "PATH: WxH FORMAT, N bytes", one line an output.
            let name = "\(selection.kind.name)@\(scale)x."
            let line = try #require(result.stdout.split(separator: "\n").first { $0.contains(name) }, "\(entry.file) @ \(slot): \(result.stdout)")
            let size = try #require(line.split(separator: " ").first { $0.contains("x") && $0.first?.isNumber == true })
            #expect(size == "\(expected.width)x\(expected.height)",
                    "\(entry.file) (\(shown.width)x\(shown.height) shown) @ \(slot): expected \(expected.width)x\(expected.height), got \(line)")
        }
    }

    @Test("ERROR files: exit 65, one line naming the file, nothing left, under 2 s and 200 MB",
          arguments: FormatsManifestEntry.with(status: "ERROR"))
    func errorFile(_ entry: FormatsManifestEntry) throws {
        let thumbd = try requireThumbd()
        let folder = try makeTemporaryFolder("formats-error")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for sandbox in [true, false] {
            let result = try ChildProcess.run(thumbd, ["render", entry.path, "--config", Paths.sampleConfig, "--out-dir", folder]
                                              + Self.kinds.flatMap { ["--slot", $0] } + (sandbox ? ["--sandbox"] : []))
            let mode = sandbox ? "sandboxed" : "in process"
            #expect(result.exitCode == 65, "\(entry.file) \(mode): \(result.summary)")
            let naming = result.stderrLines.filter { $0.hasPrefix("thumbd: \(entry.path): ") }
            #expect(naming.count == 1, "\(entry.file) \(mode): \(result.stderrLines)")
            #expect(folderContents(folder).isEmpty, "\(entry.file) \(mode): left \(folderContents(folder))")
            // CPU, not wall time: a loaded test machine stretches the wall clock, never the work done.
            #expect(result.cpuSeconds < 2, "\(entry.file) \(mode): took \(result.cpuSeconds) s of CPU")
            #expect(result.maxRSSBytes < Self.maxRSSBytes, "\(entry.file) \(mode): peak RSS \(result.maxRSSBytes >> 20) MB")
        }
    }
}
