import Foundation
import Testing
import ThumbTestSupport

/// `thumbd batch --jobs FILE` and `--jobs -`: JSON lines, good ones rendered, a malformed one
/// reported with its line number.
@Suite struct BatchJobsFileTests {
    /// Line 4 is blank (producers append, editors leave blank lines), line 5 is not JSON.
    static let jobs = """
        {"asset": "photos/a.jpg"}
        {"asset": "icons/b.png", "kinds": ["large"], "scale": 2}
        {"asset": "photos/c.jpg", "kinds": ["normal", "48x48@3x,fill,circle"]}

        this is not a job
        {"asset": "photos/d.jpg", "kinds": ["x-large"]}

        """

    static func assets(_ scratch: ScratchDirectory) throws -> String {
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_2.jpg", to: "photos/a.jpg", in: assets)
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn6a08.png", to: "icons/b.png", in: assets)
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Portrait_8.jpg", to: "photos/c.jpg", in: assets)
        try scratch.copy(BatchPaths.corpus + "/libjpeg-turbo-testimages/testorig.jpg", to: "photos/d.jpg", in: assets)
        return assets
    }

    /// a: 4 default kinds; b: large@2x; c: normal + 48x48@3x (circle: a PNG); d: x-large.
    static let expectedOutputs = [
        "large@1x/photos/a.jpg.jpg", "normal@1x/photos/a.jpg.jpg", "x-large@1x/photos/a.jpg.jpg", "xx-large@1x/photos/a.jpg.jpg",
        "large@2x/icons/b.png.png", "normal@1x/photos/c.jpg.jpg", "48x48-fill-circle@3x/photos/c.jpg.png", "x-large@1x/photos/d.jpg.jpg",
    ]

    static func check(_ result: BatchResult, source: String, out: String) throws {
        #expect(result.exitCode == 65, "a malformed line is a failed input: \(result.describeText)")
        let summary = try #require(result.summary, result.describe)
        #expect(summary.rendered == 8, "a ×4, b, c ×2, d: \(summary.rendered)")
        #expect(summary.failed == 1)
        let failure = try #require(summary.failures.first)
        #expect(failure.asset == "\(source):5", "the malformed job is on line 5 of the file: \(failure.asset)")
        #expect(failure.reason.contains("not a JSON object"), "\(failure.reason)")
        let tree = Batch.files(under: out).visible
        for path in expectedOutputs { #expect(tree.contains(path), "missing \(path) in \(tree)") }
        #expect(tree.count == 8, "\(tree)")
        for path in tree { #expect(Batch.isCompleteImage(out + "/" + path), "bad output \(path)") }
    }

    @Test func jobsFileRendersTheGoodLinesAndNamesTheBadLine() throws {
        let scratch = try ScratchDirectory("batch-jobs-file")
        let assets = try Self.assets(scratch)
        let file = scratch.path("jobs.jsonl")
        try scratch.write(Self.jobs, to: file)
        let out = scratch.path("out")
        let result = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out, "--json"],
                                   scratch: scratch)
        try Self.check(result, source: file, out: out)
        // Again: the good lines are up to date, the bad one fails again.
        let again = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out, "--json"],
                                  scratch: scratch)
        #expect(again.exitCode == 65)
        #expect(again.summary?.rendered == 0, again.describe)
        #expect(again.summary?.upToDate == 8, again.describe)
    }

    @Test func jobsOnStandardInputWithATextSummary() throws {
        let scratch = try ScratchDirectory("batch-jobs-stdin")
        let assets = try Self.assets(scratch)
        let file = scratch.path("stdin.jsonl")
        try scratch.write(Self.jobs, to: file)
        let out = scratch.path("out")
        let json = try Batch.run(["--jobs", "-", "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out, "--json"],
                                 stdin: file, scratch: scratch)
        try Self.check(json, source: "-", out: out)

        // Text mode: the summary line on stdout, the failure on stderr, one line.
        let text = try Batch.run(["--jobs", "-", "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out],
                                 stdin: file, scratch: scratch)
        #expect(text.exitCode == 65, text.describe)
        #expect(text.stdout.hasPrefix("rendered 0, already up to date 8, failed 1, "), "\(text.stdout)")
        #expect(text.stdout.hasSuffix(" img/s\n"), "\(text.stdout)")
        let failureLines = text.stderr.split(separator: "\n").filter { $0.hasPrefix("thumbd: ") }
        #expect(failureLines.count == 1, "\(text.stderr)")
        #expect(failureLines.first?.contains("not a JSON object") == true)
    }

    @Test func noInputsAndBadArgumentsHaveTheirExitCodes() throws {
        let scratch = try ScratchDirectory("batch-jobs-usage")
        #expect(try Batch.run([scratch.path("nonexistent")], scratch: scratch).exitCode == 66)
        #expect(try Batch.run([scratch.path, "--jobs", "-"], scratch: scratch).exitCode == 64, "two inputs")
        #expect(try Batch.run([scratch.path, "--kinds", "nosuchkind", "--cache", scratch.path("cache")], scratch: scratch).exitCode == 64)
        try scratch.write("{ not json", to: scratch.path("bad.json"))
        #expect(try Batch.run(["--config", scratch.path("bad.json"), scratch.path], scratch: scratch).exitCode == 78)
        let empty = try Batch.run([scratch.path, "--cache", scratch.path("cache"), "--json"], scratch: scratch)
        #expect(empty.exitCode == 0, empty.describe)
        #expect(empty.summary?.rendered == 0)
    }
}

/// A job's `format` and the command's `--format`: the output is written in that format, AVIF
/// included (a batch is off every request's path); a bad format fails its job, naming it.
@Suite struct BatchFormatTests {
    @Test func jobsNameTheirOutputFormat() throws {
        let scratch = try ScratchDirectory("batch-jobs-format")
        let assets = try BatchJobsFileTests.assets(scratch)
        let file = scratch.path("jobs.jsonl")
        try scratch.write("""
            {"asset": "photos/a.jpg", "kinds": ["large"], "format": "webp"}
            {"asset": "icons/b.png", "kinds": ["large"], "format": "avif"}
            {"asset": "photos/c.jpg", "kinds": ["large"]}
            {"asset": "photos/d.jpg", "kinds": ["large"], "format": "tiff"}

            """, to: file)
        let out = scratch.path("out")
        let result = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out,
                                    "--format", "png", "--json"], scratch: scratch)
        #expect(result.exitCode == 65, result.describe)
        let summary = try #require(result.summary, result.describe)
        #expect(summary.rendered == 3 && summary.failed == 1, result.describe)
        #expect(summary.failures.first?.reason.contains("'format' must be one of auto, jpeg, png, webp, avif") == true, result.describe)
        let tree = Batch.files(under: out).visible
        #expect(tree == ["large@1x/icons/b.png.avif", "large@1x/photos/a.jpg.webp", "large@1x/photos/c.jpg.png"], "\(tree)")
        for path in tree { #expect(Batch.isCompleteImage(out + "/" + path), "bad output \(path)") }
        // Up to date in the format asked for, not in another.
        let again = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out,
                                   "--format", "png", "--json"], scratch: scratch)
        #expect(again.summary?.rendered == 0 && again.summary?.upToDate == 3, again.describe)
    }
}
