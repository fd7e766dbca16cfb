import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbBatch

/// Issue 8, items 4 and 14 at the batch doors: job lines, spool files and Redis fields are
/// parsed into bounded values, their errors name the field and the range without echoing
/// the input, a job that would have crashed the renderer fails as malformed, and a spool job
/// whose process keeps dying goes to failed/ instead of crashing every next consumer.
@Suite struct BatchBoundsTests {
    static func reason(_ text: String) -> String {
        do {
            let job = try BatchJob.parse(Data(text.utf8))
            return "accepted: \(job)"
        } catch {
            return error.reason
        }
    }

    @Test(arguments: [
        (#"{"asset": "a.jpg", "kinds": ["1e19x1"]}"#, "'kinds[0]': bad slot '1e19x1'"),
        (#"{"asset": "a.jpg", "kinds": ["4096x4096@4x,upscale,fill"]}"#, "'kinds[0]': bad slot"),
        (#"{"asset": "a.jpg", "kinds": ["9000x9000"]}"#, "'kinds[0]': bad slot"),
        (#"{"asset": "a.jpg", "kinds": ["large@9x"]}"#, "'kinds[0]': bad slot 'large@9x'"),
        (#"{"asset": "a.jpg", "kinds": [5]}"#, "'kinds[0]' must be a kind name or inline spec, got 5"),
        (#"{"asset": "a.jpg", "scale": 1e17}"#, "'scale' must be 1 to 4 (a whole number), got 1e+17"),
        (#"{"asset": "a.jpg", "scale": 1.5}"#, "'scale' must be 1 to 4"),
        (#"{"asset": "a.jpg", "scale": 0}"#, "'scale' must be 1 to 4"),
        (#"{"asset": "a.jpg", "scale": -5}"#, "'scale' must be 1 to 4"),
        (#"{"asset": "a\u0000.jpg"}"#, "'asset' contains a NUL byte"),
        (#"{"asset": 12}"#, "'asset' must be a non-empty string"),
    ])
    func jobFieldsAreBounded(_ text: String, _ expected: String) {
        let reason = Self.reason(text)
        #expect(reason.hasPrefix(expected), "\(text): \(reason)")
    }

    @Test func longInputIsRefusedWithoutBeingEchoed() {
        let long = String(repeating: "x", count: 5_000)
        let cases: [(String, String)] = [
            (#"{"asset": "\#(long)"}"#, "'asset' is 5000 bytes, at most 4096"),
            (#"{"asset": "\#(String(repeating: "y", count: 10 << 20))"}"#, "a job is at most 65536 bytes"),
            (#"{"asset": "a.jpg", "\#(long)": 1}"#, "unknown key 'xxx"),
            (#"{"asset": "a.jpg", "kinds": ["\#(long)"]}"#, "'kinds[0]' must be 1 to 256 bytes"),
            (#"{"asset": "a.jpg", "kinds": [\#((0...32).map { _ in "\"large\"" }.joined(separator: ","))]}"#, "'kinds' lists 33 kinds, at most 32"),
        ]
        for (text, expected) in cases {
            let reason = Self.reason(text)
            #expect(reason.hasPrefix(expected), "\(reason.prefix(300))")
            #expect(reason.utf8.count < 400, "a \(reason.utf8.count)-byte reason")
        }
    }

    @Test func redisFieldsAreParsedLikeTheJSONForm() throws {
        let job = try BatchJob.parse(redisFields: ["asset", "a.jpg", "kinds", "large,48x48@3x,fill,circle", "scale", "2", "producer", "x"])
        #expect(job == BatchJob(asset: "a.jpg", kinds: ["large", "48x48@3x,fill,circle"], scale: 2))
        #expect(try BatchJob.parse(redisFields: ["job", #"{"asset": "b.png", "scale": 3}"#]) == BatchJob(asset: "b.png", scale: 3))
        #expect(try BatchJob.parse(redisFields: ["asset", "c.heic", "format", "avif"]) == BatchJob(asset: "c.heic", format: .avif))
        #expect(try BatchJob.parse(redisFields: ["job", #"{"asset": "d.gif", "format": "webp"}"#]) == BatchJob(asset: "d.gif", format: .webp))
        let refused: [([String], String)] = [
            (["asset", "a.jpg", "scale", "1e17"], "'scale' must be 1 to 4 (a whole number), got '1e17'"),
            (["asset", "a.jpg", "scale", "true"], "'scale' must be 1 to 4"),
            (["asset", "a.jpg", "format", "bmp"], "'format' must be one of auto, jpeg, png, webp, avif"),
            (["asset", "a.jpg", "kinds", "1e19x1@4x"], "'kinds[0]': bad slot"),
            (["asset", String(repeating: "z", count: 10 << 20)], "'asset' is 10485760 bytes, at most 4096"),
            (["job", #"{"asset": "a.jpg", "scale": 1e17}"#], "'scale' must be 1 to 4"),
            (["kinds", "large"], "no 'job' field"),
        ]
        for (fields, expected) in refused {
            do {
                let parsed = try BatchJob.parse(redisFields: fields)
                Issue.record("accepted \(parsed)")
            } catch {
                #expect(error.reason.hasPrefix(expected) && error.reason.utf8.count < 400, "\(error.reason.prefix(300))")
            }
        }
    }

    @Test func aJobsFileWithAHugeAssetNamePrintsShortErrors() throws {
        let scratch = try ScratchDirectory("batch-jobs-huge")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn6a08.png", to: "ok.png", in: assets)
        let file = scratch.path("jobs.jsonl")
        let lines = [#"{"asset": "\#(String(repeating: "n", count: 10 << 20)).jpg"}"#,
                     #"{"asset": "\#(String(repeating: "m", count: 5_000)).jpg"}"#,
                     #"{"asset": "ok.png", "kinds": ["large"]}"#]
        try scratch.write(lines.joined(separator: "\n") + "\n", to: file)
        let result = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache")], scratch: scratch)
        // On 31927a0 the 10 MB name was echoed in every failure line: 84 MB of stderr.
        #expect(result.exitCode == 65, "exit \(String(describing: result.exitCode)) signal \(String(describing: result.signal))")
        #expect(result.stderr.utf8.count < 4_096, "\(result.stderr.utf8.count) bytes of stderr")
        let failures = result.stderr.split(separator: "\n").filter { $0.hasPrefix("thumbd: ") }
        #expect(failures.count == 2, "\(result.stderr.prefix(2_000))")
        #expect(failures.contains { $0.contains("\(file):1") && $0.contains("at most 65536 bytes") }, "\(result.stderr.prefix(2_000))")
        #expect(failures.contains { $0.contains("\(file):2") && $0.contains("at most 4096") }, "\(result.stderr.prefix(2_000))")
        #expect(result.stdout.hasPrefix("rendered 1,"), "\(result.stdout)")
    }

    @Test func aJobsLineWhoseKindWouldCrashFailsAsMalformed() throws {
        let scratch = try ScratchDirectory("batch-jobs-trap")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn6a08.png", to: "ok.png", in: assets)
        let file = scratch.path("jobs.jsonl")
        try scratch.write(#"{"asset": "ok.png", "kinds": ["1e19x1"]}"# + "\n" + #"{"asset": "ok.png", "kinds": ["large"]}"# + "\n", to: file)
        let result = try Batch.run(["--jobs", file, "--assets", assets, "--cache", scratch.path("cache")], scratch: scratch)
        // On 31927a0 the 1e19x1 kind trapped the whole batch (SIGILL).
        #expect(result.exitCode == 65, "exit \(String(describing: result.exitCode)) signal \(String(describing: result.signal))")
        let failures = result.stderr.split(separator: "\n").filter { $0.hasPrefix("thumbd: ") }
        #expect(failures.count == 1 && failures[0].contains("\(file):1") && failures[0].contains("1e19x1"), "\(result.stderr)")
        #expect(result.stdout.hasPrefix("rendered 1,"), "\(result.stdout)")
    }

    @Test func aSpoolJobWhoseKindWouldCrashFailsAsMalformed() throws {
        let scratch = try ScratchDirectory("batch-spool-trap")
        let (assets, spool) = (scratch.path("assets"), scratch.path("spool"))
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn6a08.png", to: "ok.png", in: assets)
        try SpoolTests.submit(#"{"asset": "ok.png", "kinds": ["1e19x1@4x"]}"#, name: "a-trap.json", spool: spool, scratch: scratch)
        try SpoolTests.submit(#"{"asset": "ok.png", "kinds": ["large"], "scale": 1e17}"#, name: "b-scale.json", spool: spool, scratch: scratch)
        try SpoolTests.submit(#"{"asset": "ok.png", "kinds": ["large"]}"#, name: "c-good.json", spool: spool, scratch: scratch)
        let result = try Batch.run(["--spool", spool, "--assets", assets, "--cache", scratch.path("cache"), "--json"], scratch: scratch)
        #expect(result.exitCode == 65, result.describe)
        #expect(Batch.names(spool + "/done") == ["c-good.json"])
        #expect(Batch.names(spool + "/failed") == ["a-trap.json", "a-trap.json.reason", "b-scale.json", "b-scale.json.reason"])
        #expect(SpoolTests.reason(spool, "a-trap.json").contains("malformed job: 'kinds[0]': bad slot '1e19x1@4x'"))
        #expect(SpoolTests.reason(spool, "b-scale.json").contains("malformed job: 'scale' must be 1 to 4"))
    }

    @Test func aSpoolJobWhoseProcessDiesThreeTimesGoesToFailed() throws {
        let scratch = try ScratchDirectory("batch-spool-loop")
        let (assets, spool) = (scratch.path("assets"), scratch.path("spool"))
        let photo = try #require(try CorpusManifest.jpegAndPNG().first { $0.set == "large-photos" && $0.status == "OK" })
        try scratch.copy(BatchPaths.corpus + "/" + photo.relativePath, to: "big.jpg", in: assets)
        // A slow job (a 12 MP photo at xx-large@4x): each consumer is killed while it holds it,
        // as a renderer crash would.
        try SpoolTests.submit(#"{"asset": "big.jpg", "kinds": ["xx-large"], "scale": 4}"#, name: "loop.json", spool: spool, scratch: scratch)
        let arguments = ["--spool", spool, "--assets", assets, "--cache", scratch.path("cache"), "--workers", "1", "--json"]
        for death in 1...3 {
            let consumer = try BatchProcess(arguments, scratch: scratch)
            let holding = Batch.waitUntil(consumer) { Batch.names(spool + "/claimed").contains("\(consumer.pid).loop.json") }
            consumer.kill9()
            let killed = consumer.wait()
            try #require(holding && killed.signal == 9, "death \(death): \(killed.describeText)")
            if death > 1 { #expect(killed.stderr.contains("took up 1 job"), "death \(death): \(killed.stderr)") }
        }
        // On 31927a0 the fourth consumer takes the job up again (and would crash again, forever).
        let last = try Batch.run(arguments, scratch: scratch)
        #expect(last.exitCode == 65, last.describe)
        #expect(Batch.names(spool + "/failed") == ["loop.json", "loop.json.reason"], last.describe)
        #expect(SpoolTests.reason(spool, "loop.json").contains("the renderer died on this job"))
        for folder in ["incoming", "claimed", "done"] { #expect(Batch.names(spool + "/" + folder).isEmpty, "\(folder): \(Batch.names(spool + "/" + folder))") }
        #expect(last.summary?.failures.contains { $0.asset == "loop.json" && $0.reason.contains("the renderer died") } == true, last.describe)

        // A job that finishes after a take-over leaves no counter behind.
        try SpoolTests.submit(#"{"asset": "big.jpg", "kinds": ["normal"]}"#, name: "once.json", spool: spool, scratch: scratch)
        let first = try BatchProcess(arguments, scratch: scratch)
        _ = Batch.waitUntil(first) { Batch.names(spool + "/claimed").contains("\(first.pid).once.json") }
        first.kill9()
        _ = first.wait()
        let finisher = try Batch.run(arguments, scratch: scratch)
        #expect(finisher.exitCode == 0, finisher.describe)
        #expect(Batch.names(spool + "/done") == ["once.json"])
        #expect(Batch.names(spool + "/claimed").isEmpty, "\(Batch.names(spool + "/claimed"))")
    }
}
