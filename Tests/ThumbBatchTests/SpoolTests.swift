import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch --spool DIR`: malformed job files, two consumers on one spool, abandoned claims.
@Suite struct SpoolTests {
    /// Writes a job file into incoming/ the way a producer does: temporary name, then rename.
    static func submit(_ text: String, name: String, spool: String, scratch: ScratchDirectory) throws {
        let temporary = spool + "/incoming/." + name + ".tmp"
        try scratch.write(text, to: temporary)
        try FileManager.default.moveItem(atPath: temporary, toPath: spool + "/incoming/" + name)
    }

    static func job(_ asset: String, kinds: [String]? = nil) -> String {
        let kindList = kinds.map { ", \"kinds\": [" + $0.map { "\"\($0)\"" }.joined(separator: ", ") + "]" } ?? ""
        return "{\"asset\": \"\(asset)\"\(kindList)}"
    }

    static func reason(_ spool: String, _ name: String) -> String {
        (try? String(contentsOfFile: spool + "/failed/" + name + ".reason", encoding: .utf8)) ?? "<no \(name).reason>"
    }

    @Test func malformedJobFilesGoToFailedWithAReasonAndTheQueueGoesOn() throws {
        let scratch = try ScratchDirectory("batch-spool-malformed")
        let (assets, spool) = (scratch.path("assets"), scratch.path("spool"))
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_1.jpg", to: "good1.jpg", in: assets)
        try scratch.copy(BatchPaths.corpus + "/pngsuite/basn6a08.png", to: "good2.png", in: assets)
        // Claimed in name order: the malformed ones come first.
        try Self.submit("this is not json", name: "a-notjson.json", spool: spool, scratch: scratch)
        try Self.submit(#"{"kinds": ["large"]}"#, name: "b-noasset.json", spool: spool, scratch: scratch)
        try Self.submit(#"{"asset": "good1.jpg", "colour": "red"}"#, name: "c-unknownkey.json", spool: spool, scratch: scratch)
        try Self.submit(Self.job("good1.jpg", kinds: ["nosuchkind"]), name: "d-unknownkind.json", spool: spool, scratch: scratch)
        try Self.submit(Self.job("missing.jpg"), name: "e-missingasset.json", spool: spool, scratch: scratch)
        try Self.submit(Self.job("good1.jpg"), name: "f-good.json", spool: spool, scratch: scratch)
        try Self.submit(Self.job("good2.png", kinds: ["large"]), name: "g-good.json", spool: spool, scratch: scratch)

        let result = try Batch.run(["--spool", spool, "--assets", assets, "--cache", scratch.path("cache"),
                                    "--kinds", "normal,large", "--json"], scratch: scratch)
        #expect(result.exitCode == 65, result.describe)
        let summary = try #require(result.summary, result.describe)
        #expect(summary.rendered == 3, "f-good: 2 kinds, g-good: 1")
        #expect(Batch.names(spool + "/done") == ["f-good.json", "g-good.json"])
        #expect(Batch.names(spool + "/incoming").isEmpty)
        #expect(Batch.names(spool + "/claimed").isEmpty)
        let failedNames = ["a-notjson.json", "b-noasset.json", "c-unknownkey.json", "d-unknownkind.json", "e-missingasset.json"]
        #expect(Batch.names(spool + "/failed") == failedNames.flatMap { [$0, $0 + ".reason"] }.sorted())
        #expect(Self.reason(spool, "a-notjson.json").contains("not a JSON object"))
        #expect(Self.reason(spool, "b-noasset.json").contains("'asset'"))
        #expect(Self.reason(spool, "c-unknownkey.json").contains("unknown key 'colour'"))
        #expect(Self.reason(spool, "d-unknownkind.json").contains("nosuchkind"))
        #expect(Self.reason(spool, "e-missingasset.json").contains("missing.jpg: no such asset"))
        // The summary names the malformed files too.
        for name in failedNames.prefix(3) {
            #expect(summary.failures.contains { $0.asset == name && $0.reason.hasPrefix("malformed job") }, "\(name) not in \(summary.failures)")
        }
        // The failed job files are the producer's bytes, untouched.
        #expect(try String(contentsOfFile: spool + "/failed/a-notjson.json", encoding: .utf8) == "this is not json")
    }

    @Test func twoConsumersStartedTogetherRenderEachJobOnce() throws {
        let scratch = try ScratchDirectory("batch-spool-two")
        let (assets, spool) = (scratch.path("assets"), scratch.path("spool"))
        let jobs = 60, kinds = 2
        for index in 0..<jobs {
            let source = ["exif-orientation/Landscape_1.jpg", "exif-orientation/Portrait_6.jpg", "pngsuite/basn6a08.png"][index % 3]
            let asset = String(format: "p%02d.", index) + (source as NSString).pathExtension
            try scratch.copy(BatchPaths.corpus + "/" + source, to: asset, in: assets)
            try Self.submit(Self.job(asset), name: String(format: "job-%02d.json", index), spool: spool, scratch: scratch)
        }
        // Separate caches and output trees: a job done by both would be rendered twice.
        let consumers = try ["a", "b"].map { id in
            try BatchProcess(["--spool", spool, "--assets", assets, "--cache", scratch.path("cache-" + id), "--out-dir", scratch.path("out-" + id),
                              "--kinds", "normal,large", "--workers", "1", "--json"], scratch: scratch)
        }
        let results = consumers.map { $0.wait() }
        for result in results { #expect(result.exitCode == 0, result.describe) }
        let summaries = try results.map { try #require($0.summary, $0.describe) }
        #expect(summaries.map(\.rendered).reduce(0, +) == jobs * kinds, "rendered: \(summaries.map(\.rendered))")
        #expect(summaries.map(\.upToDate).reduce(0, +) == 0)
        #expect(Batch.names(spool + "/done") == (0..<jobs).map { String(format: "job-%02d.json", $0) })
        for folder in ["incoming", "claimed", "failed"] { #expect(Batch.names(spool + "/" + folder).isEmpty, "\(folder) not empty") }
        let trees = ["a", "b"].map { Set(Batch.files(under: scratch.path("out-" + $0)).visible) }
        #expect(trees[0].isDisjoint(with: trees[1]), "rendered by both: \(trees[0].intersection(trees[1]).sorted())")
        #expect(trees[0].count + trees[1].count == jobs * kinds)
        print("note: consumer a rendered \(summaries[0].rendered), b rendered \(summaries[1].rendered)")
    }

    @Test func aClaimOfADeadProcessIsTakenUpAgain() throws {
        let scratch = try ScratchDirectory("batch-spool-dead")
        let (assets, spool) = (scratch.path("assets"), scratch.path("spool"))
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_1.jpg", to: "x.jpg", in: assets)
        // A pid that is certainly not running: a finished child's.
        let deadPID = try ChildProcess.run("/bin/true", []).pid
        #expect(kill(deadPID, 0) != 0)
        try scratch.write(Self.job("x.jpg"), to: spool + "/claimed/\(deadPID).orphan.json")
        try scratch.write(Self.job("x.jpg", kinds: ["large"]), to: spool + "/incoming/fresh.json")

        let result = try Batch.run(["--spool", spool, "--assets", assets, "--cache", scratch.path("cache"), "--kinds", "normal", "--json"],
                                   scratch: scratch)
        #expect(result.exitCode == 0, result.describe)
        #expect(result.stderr.contains("took up 1 job"), "\(result.stderr)")
        #expect(Batch.names(spool + "/done") == ["fresh.json", "orphan.json"])
        #expect(Batch.names(spool + "/claimed").isEmpty)
        #expect(Batch.names(spool + "/incoming").isEmpty)
        #expect(result.summary?.rendered == 2, result.describe)
    }

    @Test func aConsumerKilledMidRunIsFinishedByTheNextOne() throws {
        let scratch = try ScratchDirectory("batch-spool-kill")
        let (assets, spool, out) = (scratch.path("assets"), scratch.path("spool"), scratch.path("out"))
        let names = try Batch.copyLargeJPEGs(into: assets, scratch: scratch)
        for name in names { try Self.submit(Self.job(name), name: (name as NSString).deletingPathExtension + ".json", spool: spool, scratch: scratch) }
        let arguments = ["--spool", spool, "--assets", assets, "--cache", scratch.path("cache"), "--out-dir", out, "--workers", "1", "--json"]

        let first = try BatchProcess(arguments, scratch: scratch)
        let reached = Batch.waitUntil(first) { Batch.names(spool + "/done").count >= 3 }
        first.kill9()
        let killed = first.wait()
        try #require(reached && killed.signal == 9, "the consumer was not killed mid-run: \(killed.describeText)")
        let stranded = Batch.names(spool + "/claimed")
        #expect(!stranded.isEmpty, "a consumer killed mid-run holds claims")
        #expect(stranded.allSatisfy { $0.hasPrefix("\(first.pid).") }, "\(stranded)")

        let second = try Batch.run(arguments, scratch: scratch)
        #expect(second.exitCode == 0, second.describe)
        #expect(second.stderr.contains("took up \(stranded.count) job"), "\(second.stderr)")
        #expect(Batch.names(spool + "/done") == names.map { ($0 as NSString).deletingPathExtension + ".json" }.sorted())
        for folder in ["incoming", "claimed", "failed"] { #expect(Batch.names(spool + "/" + folder).isEmpty, "\(folder) not empty") }
        let tree = Batch.files(under: out).visible
        #expect(tree.count == names.count * 4)
        for path in tree { #expect(Batch.isCompleteImage(out + "/" + path), "bad output \(path)") }
    }
}
