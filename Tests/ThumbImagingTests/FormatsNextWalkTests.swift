import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging

/// The rows of `formats-next-manifest.tsv` (JPEG XL, TIFF, HDR) of the sets thumbd reads.
enum FormatsNext {
    /// The sets walked: each format's folder joins when its loader does.
    static let walkedSets: Set<String> = ["formats-next/hdr", "formats-next/tiff", "formats-next/jxl"]

    static func rows(status: String) throws -> [CorpusManifest.Row] {
        try CorpusManifest.nextFormats().filter { walkedSets.contains($0.set) && $0.status == status }
    }
}

/// `formats-next-manifest.tsv` through the real `thumbd render`, as `FormatsManifestWalkTests`
/// walks the other formats: OK files render for three kinds at the size of their displayed
/// orientation (the manifest's dims, which libjxl, libheif and the TIFF Orientation tag give);
/// EITHER files render so or are refused as ERROR files are; ERROR files exit 65 with one line
/// naming the file, leave nothing, under 2 s of CPU and 200 MB; sandboxed and in process.
/// Each format's own tests compare the pixels (with vips, or with the reference tone mapping).
@Suite("Formats-next manifest walk (JPEG XL, TIFF, HDR)")
struct FormatsNextWalkTests {
    static let kinds = FormatsManifestWalkTests.kinds
    static let maxRSSBytes = 200 << 20

    @Test func manifestIsThere() throws {
        let rows = try CorpusManifest.nextFormats()
        #expect(rows.count == 55)
        #expect(Set(rows.map(\.set)) == ["formats-next/jxl", "formats-next/tiff", "formats-next/hdr"])
        #expect(rows.allSatisfy { ["OK", "EITHER", "ERROR"].contains($0.status) })
        #expect(rows.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
    }

    @Test("OK files render for three kinds at their displayed size", arguments: try FormatsNext.rows(status: "OK"))
    func okFile(_ entry: CorpusManifest.Row) throws {
        for sandbox in [true, false] {
            let outcome = try Self.render(entry, sandbox: sandbox)
            try #require(outcome.result.exitCode == 0, "\(entry.file) \(outcome.mode): \(outcome.result.summary)")
            try Self.expectSizes(entry, outcome.result)
        }
    }

    @Test("EITHER files render as OK files do, or are refused as ERROR files are", arguments: try FormatsNext.rows(status: "EITHER"))
    func eitherFile(_ entry: CorpusManifest.Row) throws {
        for sandbox in [true, false] {
            let outcome = try Self.render(entry, sandbox: sandbox)
            if outcome.result.exitCode == 0 {
                try Self.expectSizes(entry, outcome.result)
            } else {
                try Self.expectRefusal(entry, outcome)
            }
        }
    }

    @Test("ERROR files: exit 65, one line naming the file, nothing left, under 2 s and 200 MB",
          arguments: try FormatsNext.rows(status: "ERROR"))
    func errorFile(_ entry: CorpusManifest.Row) throws {
        for sandbox in [true, false] {
            try Self.expectRefusal(entry, try Self.render(entry, sandbox: sandbox))
        }
    }

    /// One `thumbd render` of the walk's three kinds (shared with `FormatsManifestWalkTests`).
    struct Outcome {
        var result: MeasuredChild.Result
        var mode: String
        var leftFiles: [String]
    }

    static func render(_ entry: CorpusManifest.Row, sandbox: Bool) throws -> Outcome {
        let thumbd = try requireThumbd()
        let scratch = try ScratchDirectory("formats-walk")
        defer { scratch.remove() }
        let result = try MeasuredChild.run(thumbd, ["render", entry.path, "--config", Paths.sampleConfig, "--out-dir", scratch.path]
                                          + kinds.flatMap { ["--slot", $0] } + (sandbox ? ["--sandbox"] : []))
        return Outcome(result: result, mode: sandbox ? "sandboxed" : "in process", leftFiles: folderContents(scratch.path))
    }

    static func expectSizes(_ entry: CorpusManifest.Row, _ result: MeasuredChild.Result) throws {
        let width = try #require(entry.width, "\(entry.file): the manifest gives no size")
        try expectSizes(entry, result, shown: (width, try #require(entry.height)))
    }

    /// Each kind's output line says the size a source shown at `shown` gives.
    static func expectSizes(_ entry: CorpusManifest.Row, _ result: MeasuredChild.Result, shown: (width: Int, height: Int)) throws {
        let (width, height) = shown
        let config = try #require(Sample.config)
        for slot in kinds {
            let selection = try config.catalog.resolve(slot)
            let scale = selection.scale ?? selection.kind.scales[0]
            let pixels = selection.kind.pixelSize(scale: scale)
            let expected = ExpectedSize.of(sourceWidth: width, sourceHeight: height, slotWidth: pixels.width,
                                           slotHeight: pixels.height, fill: selection.kind.mode == .fill)
            let name = "\(selection.kind.name)@\(scale)x."
            let line = try #require(result.stdout.split(separator: "\n").first { $0.contains(name) }, "\(entry.file) @ \(slot): \(result.stdout)")
            let size = try #require(line.split(separator: " ").first { $0.contains("x") && $0.first?.isNumber == true })
            #expect(size == "\(expected.width)x\(expected.height)",
                    "\(entry.file) (\(width)x\(height) shown) @ \(slot): expected \(expected.width)x\(expected.height), got \(line)")
        }
    }

    static func expectRefusal(_ entry: CorpusManifest.Row, _ outcome: Outcome) throws {
        let result = outcome.result
        #expect(result.exitCode == 65, "\(entry.file) \(outcome.mode): \(result.summary)")
        let naming = result.stderrLines.filter { $0.hasPrefix("thumbd: \(entry.path): ") }
        #expect(naming.count == 1, "\(entry.file) \(outcome.mode): \(result.stderrLines)")
        #expect(outcome.leftFiles.isEmpty, "\(entry.file) \(outcome.mode): left \(outcome.leftFiles)")
        // CPU, not wall time: a loaded machine stretches the wall clock, never the work done.
        #expect(result.cpuSeconds < 2, "\(entry.file) \(outcome.mode): took \(result.cpuSeconds) s of CPU")
        #expect(result.maxRSSBytes < maxRSSBytes, "\(entry.file) \(outcome.mode): peak RSS \(result.maxRSSBytes >> 20) MB")
    }
}
