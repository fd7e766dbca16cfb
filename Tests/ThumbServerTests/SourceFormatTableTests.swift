import Foundation
import Testing
import ThumbImaging
import ThumbSystem
import ThumbTestSupport
@testable import ThumbPipeline
@testable import ThumbWorker

/// The one table of formats (issue 38): every row reaches every place that reads formats. A
/// format added to the table and forgotten in the scanner, the listing, the worker protocol,
/// the fuzz catalogue or docs/formats.md fails here, named.
@Suite struct SourceFormatTableTests {
    static let table = SourceFormat.table

    @Test func everyFormatHasOneRowWithItsOwnNamesAndTag() {
        #expect(Set(Self.table.map(\.format)) == Set(SourceFormat.allCases) && Self.table.count == SourceFormat.allCases.count)
        #expect(Set(Self.table.map(\.wireTag)).count == Self.table.count, "wire tags are unique")
        #expect(!Self.table.contains { $0.wireTag == WorkerAnswer.noSourceFormatTag })
        let extensions = Self.table.flatMap(\.extensions)
        #expect(Set(extensions).count == extensions.count, "no extension names two formats")
        #expect(extensions.allSatisfy { $0 == $0.lowercased() && !$0.hasPrefix(".") && $0.utf8.count <= 4 })
        #expect(Self.table.allSatisfy { !$0.mediaTypes.isEmpty && !$0.fuzzTargets.isEmpty && !$0.limitKeys.isEmpty })
    }

    /// One real file per format, found by its bytes in the corpus: the sniffing of every row works.
    static func sample(of format: SourceFormat) throws -> String? {
        let rows = try CorpusManifest.jpegAndPNG() + CorpusManifest.otherFormats() + CorpusManifest.nextFormats() + CorpusManifest.media()
        for row in rows where row.status == "OK" {
            guard let handle = FileHandle(forReadingAtPath: row.path) else { continue }
            let head = handle.readData(ofLength: 64)
            try? handle.close()
            if [UInt8](head).withUnsafeBytes({ SourceFormat.sniff($0) }) == format { return row.path }
        }
        return nil
    }

    /// The scanner and the watcher take every extension (any case) and, for a name without one,
    /// every format's first bytes.
    @Test func theScannerFindsEveryFormat() throws {
        let scratch = try ScratchDirectory("format-table")
        defer { scratch.remove() }
        var expected: [String] = []
        for row in Self.table {
            let sample = try #require(try Self.sample(of: row.format), "no corpus file is a \(row.name)")
            for ext in row.extensions {
                #expect(AssetNames.isImageName("a." + ext) && AssetNames.isImageName("a." + ext.uppercased()), "\(row.name) .\(ext)")
                let name = "by-name-\(row.format.rawValue)-\(ext).\(ext.uppercased())"
                try FileManager.default.copyItem(atPath: sample, toPath: scratch.path(name))
                expected.append(name)
            }
            let bare = "by-bytes-\(row.format.rawValue)"
            try FileManager.default.copyItem(atPath: sample, toPath: scratch.path(bare))
            expected.append(bare)
        }
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: scratch.path("README")))
        let scanned = AssetScanner.scan(try AssetRoot(path: scratch.path)).map(\.path)
        #expect(scanned == expected.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }

    /// The listing says each format's media by its extension.
    @Test func theListingNamesEveryFormatsMedia() {
        for row in Self.table {
            for ext in row.extensions {
                #expect(ListedAsset(path: "folder/a.\(ext.uppercased())").media == row.media, "\(row.name) .\(ext)")
            }
        }
        #expect(ListedAsset(path: "folder/IMG_0001").media == nil && ListedAsset(path: "a.txt").media == nil)
    }

    /// Every format's tag crosses the worker protocol and comes back as the format; a tag of no
    /// row is refused.
    @Test func everyFormatCrossesTheWorkerProtocol() throws {
        let order = WorkerRenderOrder(requestID: 9, status: FileStatus(size: 10, modifiedNanoseconds: 1, inode: 2, device: 3), label: "a",
                                      limits: ImageLimits(), tuning: ShrinkPlan.Tuning(), requests: [])
        for format in Array(SourceFormat.allCases) + [nil] as [SourceFormat?] {
            let frame = WorkerAnswer(results: [], cpuSeconds: 0, sourceFormat: format).encode(for: order)
            let decoded = try WorkerAnswer.decode(frame: frame, requestID: 9, requests: [], limits: ImageLimits())
            #expect(decoded.sourceFormat == format)
        }
        var forged = WorkerAnswer(results: [], cpuSeconds: 0, sourceFormat: .jpeg).encode(for: order)
        forged[forged.count - 1] = 0xFE
        #expect(throws: WorkerProtocolError.self) { try WorkerAnswer.decode(frame: forged, requestID: 9, requests: [], limits: ImageLimits()) }
    }

    /// Each row's fuzz targets exist: a folder of Fuzz/Targets, a door of Package.swift's list,
    /// and a `scripts/fuzz` that knows how to seed it (not the text doors' default).
    @Test func everyFormatIsInTheFuzzCatalogue() throws {
        let root = TestPaths.packageRoot
        let targets = Set(try FileManager.default.contentsOfDirectory(atPath: root + "/Fuzz/Targets"))
        let manifest = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        let script = try String(contentsOfFile: root + "/scripts/fuzz", encoding: .utf8)
        for row in Self.table {
            for target in row.fuzzTargets {
                #expect(targets.contains(target), "\(row.name): no Fuzz/Targets/\(target)")
                #expect(manifest.contains("\"\(target)\""), "\(row.name): Package.swift's doors do not name \(target)")
                let source = try? String(contentsOfFile: root + "/Fuzz/Targets/\(target)/FuzzTarget.swift", encoding: .utf8)
                #expect(source?.contains("LLVMFuzzerTestOneInput") == true, "\(target)")
            }
            #expect(row.fuzzTargets.contains { target in script.contains(target) || (target.hasPrefix("video-") && script.contains("video-*")) },
                    "\(row.name): scripts/fuzz has no seeds for \(row.fuzzTargets)")
        }
    }

    /// docs/formats.md has a row for each format with its extensions, media types and fuzz
    /// targets, and the README's first lines name each format.
    @Test func theDocsListEveryFormat() throws {
        let root = TestPaths.packageRoot
        let page = try String(contentsOfFile: root + "/docs/formats.md", encoding: .utf8)
        let lines = page.split(separator: "\n").filter { $0.hasPrefix("| ") }
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8).prefix(800)
        for row in Self.table {
            let line = try #require(lines.first { $0.hasPrefix("| \(row.name) |") }, "docs/formats.md has no row for \(row.name)")
            for ext in row.extensions { #expect(line.contains("`.\(ext)`"), "docs/formats.md: \(row.name) lacks .\(ext)") }
            for type in row.mediaTypes { #expect(line.contains("`\(type)`"), "docs/formats.md: \(row.name) lacks \(type)") }
            for target in row.fuzzTargets { #expect(line.contains("`\(target)`"), "docs/formats.md: \(row.name) lacks \(target)") }
            #expect(line.contains("| \(row.media.rawValue) |"), "docs/formats.md: \(row.name) is \(row.media)")
            #expect(readme.contains(row.name), "README.md's introduction does not name \(row.name)")
        }
        #expect(lines.count == Self.table.count + 1, "one row per format and the header")
    }
}
