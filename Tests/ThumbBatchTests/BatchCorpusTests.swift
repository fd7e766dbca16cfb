import Foundation
import Testing
import ThumbTestSupport

/// `thumbd batch DIR` over part of the corpus: the counts match the manifest, failures carry
/// reasons, a second run renders nothing; into the cache and into an output tree.
@Suite struct BatchCorpusTests {
    static let sets = ["pngsuite", "exif-orientation", "libjpeg-turbo-testimages"]
    static let kinds = ["large", "normal", "x-large", "xx-large"]

    /// The chosen sets copied into `scratch/assets` (manifest files only).
    static func assets(_ scratch: ScratchDirectory) throws -> [CorpusManifest.Row] {
        let files = try CorpusManifest.jpegAndPNG().filter { sets.contains($0.set) }
        try #require(files.count > 150, "no corpus manifest at \(BatchPaths.corpus)")
        for file in files { try scratch.copy(BatchPaths.corpus + "/" + file.relativePath, to: file.relativePath, in: scratch.path("assets")) }
        return files
    }

    /// Checks a first run against the manifest; returns the assets that failed.
    static func checkAgainstManifest(_ result: BatchResult, _ files: [CorpusManifest.Row]) throws -> Set<String> {
        #expect(result.exitCode == 65, "some corpus files are broken: \(result.describeText)")
        let summary = try #require(result.summary, "no JSON summary: \(result.describeText)")
        let failedAssets = Set(summary.failures.map(\.asset))
        for file in files {
            let failedKinds = summary.failures.filter { $0.asset == file.relativePath }
            switch file.status {
            case "OK":
                #expect(failedKinds.isEmpty, "OK file failed: \(file.relativePath): \(failedKinds)")
            case "ERROR" where !file.isHighPrecisionJPEG:
                #expect(Set(failedKinds.map(\.kind)) == Set(kinds.map { "\($0)@1x" }), "ERROR file not failed in every kind: \(file.relativePath)")
            default: // WARN, 12-bit/lossless JPEG: render or fail, but all kinds alike
                #expect(failedKinds.isEmpty || failedKinds.count == kinds.count, "\(file.relativePath): \(failedKinds)")
            }
            for failure in failedKinds { #expect(!failure.reason.isEmpty, "no reason for \(failure)") }
        }
        #expect(!failedAssets.isEmpty)
        #expect(summary.failed == summary.failures.count)
        #expect(summary.rendered == (files.count - failedAssets.count) * kinds.count, "rendered \(summary.rendered) of \(files.count) files")
        #expect(summary.upToDate == 0)
        #expect(summary.failures.count == failedAssets.count * kinds.count)
        return failedAssets
    }

    /// A second run: nothing rendered, everything up to date, the same failures (negative cache).
    static func checkSecondRun(_ result: BatchResult, first: BatchSummary) throws {
        #expect(result.exitCode == 65, result.describe)
        let again = try #require(result.summary, "no JSON summary: \(result.describeText)")
        #expect(again.rendered == 0, "a second run rendered again: \(again.rendered)")
        #expect(again.upToDate == first.rendered)
        #expect(Set(again.failures.map { "\($0.asset) \($0.kind)" }) == Set(first.failures.map { "\($0.asset) \($0.kind)" }))
    }

    @Test func cacheModeCountsMatchTheManifestAndASecondRunRendersNothing() throws {
        let scratch = try ScratchDirectory("batch-corpus-cache")
        let files = try Self.assets(scratch)
        let arguments = [scratch.path("assets"), "--cache", scratch.path("cache"), "--json"]
        let first = try Batch.run(arguments, scratch: scratch)
        _ = try Self.checkAgainstManifest(first, files)
        let summary = try #require(first.summary)
        try Self.checkSecondRun(try Batch.run(arguments, scratch: scratch), first: summary)
    }

    @Test func outputTreeHoldsEveryThumbnailAtItsDocumentedPath() throws {
        let scratch = try ScratchDirectory("batch-corpus-out")
        let files = try Self.assets(scratch)
        let out = scratch.path("out")
        let arguments = [scratch.path("assets"), "--cache", scratch.path("cache"), "--out-dir", out, "--json"]
        let first = try Batch.run(arguments, scratch: scratch)
        let failed = try Self.checkAgainstManifest(first, files)
        let summary = try #require(first.summary)

        // OUT/<kind>@1x/<asset path>.<jpg|png>, complete, one per rendered thumbnail.
        for file in files where !failed.contains(file.relativePath) {
            let stem = file.relativePath
            for kind in Self.kinds {
                let candidates = ["jpg", "png"].map { "\(out)/\(kind)@1x/\(stem).\($0)" }.filter { FileManager.default.fileExists(atPath: $0) }
                #expect(candidates.count == 1, "\(kind) of \(file.relativePath): \(candidates)")
                for path in candidates { #expect(Batch.isCompleteImage(path), "not a whole image: \(path)") }
            }
        }
        let tree = Batch.files(under: out)
        #expect(tree.hidden.isEmpty, "temporary files left: \(tree.hidden)")
        #expect(tree.visible.count == summary.rendered,
                "\(summary.rendered) thumbnails rendered but \(tree.visible.count) files in the tree: two assets wrote one path")
        try Self.checkSecondRun(try Batch.run(arguments, scratch: scratch), first: summary)
    }

    /// `a.jpg` and `a.png` in one folder: both thumbnails are JPEGs (an opaque PNG is thumbnailed
    /// to JPEG), so an output named without the source's extension would be shared. The corpus
    /// has such a pair: libjpeg-turbo-testimages/testorig.{jpg,png}.
    @Test func assetsDifferingOnlyInExtensionKeepTheirOwnOutputs() throws {
        let scratch = try ScratchDirectory("batch-same-stem")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_1.jpg", to: "photo.jpg", in: assets)
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn2c08.png", to: "photo.png", in: assets)
        let arguments = [assets, "--kinds", "normal", "--cache", scratch.path("cache"), "--out-dir", scratch.path("out"), "--json"]
        let first = try Batch.run(arguments, scratch: scratch)
        #expect(first.exitCode == 0, first.describe)
        #expect(first.summary?.rendered == 2)
        let tree = Batch.files(under: scratch.path("out")).visible
        #expect(tree.count == 2, "two sources, two thumbnails expected, found \(tree)")
        let second = try Batch.run(arguments, scratch: scratch)
        #expect(second.summary?.rendered == 0, "each run re-renders the pair (last writer's mtime wins): \(second.stdout)")
        #expect(second.summary?.upToDate == 2)
    }
}
