import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch --queue redis://…` against a real redis-server: consumer groups, take-over of
/// a killed consumer's jobs, exactly one result per job, dead letters, exit statuses.
@Suite(.serialized) struct RedisQueueTests {
    static let corpus = URL(fileURLWithPath: TestPaths.corpus)
    static let corrupt = ["xc1n0g08.png", "xcsn0g01.png", "xhdn0g08.png", "xs1n0g01.png", "xs2n0g01.png"]

    /// The pngsuite files the corpus manifest says decode cleanly.
    static func validPNGSuite() throws -> [String] {
        try CorpusManifest.jpegAndPNG().filter { $0.set == "pngsuite" && $0.status == "OK" }.map(\.file)
    }

    static func copyAssets(_ names: [String], into folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in names {
            try FileManager.default.copyItem(at: corpus.appendingPathComponent("pngsuite/\(name)"), to: folder.appendingPathComponent(name))
        }
    }

    /// What RedisQueue names a consumer: hostname-pid.
    static func consumerName(_ pid: Int32) -> String {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        return "\(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))-\(pid)"
    }

    func consume(_ redis: RedisFixture, _ query: String, assets: URL, cache: String, stream: String = "s") throws -> ChildProcess {
        try redis.start(["batch", "--queue", "redis://127.0.0.1:\(redis.port)/\(stream)\(query)", "--assets", assets.path,
                         "--cache", redis.scratch.appendingPathComponent(cache).path, "--kinds", "large", "--workers", "1", "--json"])
    }

    @Test func twoConsumersOneKilledEveryJobHasExactlyOneResult() throws {
        let redis = try RedisFixture()
        let valid = try Self.validPNGSuite()
        #expect(valid.count >= 160, "pngsuite OK files in the manifest: \(valid.count)")
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(valid + Self.corrupt, into: assets)
        let names = valid + Self.corrupt
        // 500 distinct (asset, kind, scale) jobs: separate caches per consumer, so an up-to-date
        // skip can never hide a second rendering, and the results stream is the one ledger.
        let combos = [#""kinds": ["large"]"#, #""kinds": ["normal"]"#, #""kinds": ["x-large"]"#, #""kinds": ["large"], "scale": 2"#]
        var commands = "", jobAssets: [String] = []
        for index in 0..<500 {
            let asset = names[index % names.count]
            jobAssets.append(asset)
            commands += "XADD s * job '{\"asset\": \"\(asset)\", \(combos[index / names.count])}'\n"
        }
        let ids = try redis.cli(stdin: commands).split(separator: "\n").map(String.init)
        try #require(ids.count == 500 && Set(ids).count == 500, "XADD replies: \(ids.prefix(3))…")
        let assetOf = Dictionary(uniqueKeysWithValues: zip(ids, jobAssets))
        let corruptIDs = Set(ids.filter { Self.corrupt.contains(assetOf[$0]!) })

        let query = "?claim-idle-ms=1500"
        let victim = try consume(redis, query, assets: assets, cache: "cache-a")
        let survivor = try consume(redis, query, assets: assets, cache: "cache-b")
        // SIGKILL the victim once some jobs are acknowledged, while it holds others.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, victim.isRunning, (Int(try redis.cli("XLEN", "s:results")) ?? 0) < 80 { usleep(5_000) }
        try #require(victim.isRunning, "the victim finished before it could be killed: \(victim.stderr)")
        victim.kill()
        let victimName = Self.consumerName(victim.pid), survivorName = Self.consumerName(survivor.pid)
        let orphaned = try redis.pendingDetails("s").filter { $0.consumer == victimName }.map(\.id)
        #expect(!orphaned.isEmpty, "the victim held no job when killed: nothing to take over")

        let status = survivor.end(within: 60).exitCode
        #expect(status == 65, "survivor exit \(String(describing: status)): \(survivor.stderr.suffix(500))")
        let summary = try JSONSerialization.jsonObject(with: Data(survivor.stdout.utf8)) as? [String: Any]
        let failedAssets = Set((summary?["failures"] as? [[String: Any]] ?? []).compactMap { $0["asset"] as? String })
        #expect(failedAssets.isSubset(of: Set(Self.corrupt)), "survivor failures beyond the corrupt files: \(failedAssets)")

        let results = try redis.entries("s:results")
        var perID: [String: Int] = [:]
        for result in results { perID[result["id"] ?? "?", default: 0] += 1 }
        #expect(Set(perID.keys) == Set(ids), "result ids not the job ids: \(Set(perID.keys).symmetricDifference(Set(ids)).prefix(5))")
        let repeated = perID.filter { $0.value != 1 }
        #expect(repeated.isEmpty, "jobs with more than one result: \(repeated.prefix(5))")
        #expect(results.count == 500)
        for result in results {
            let id = result["id"] ?? "?"
            #expect(result["asset"] == assetOf[id], "result \(id): asset \(result["asset"] ?? "-")")
            #expect(result["status"] == (corruptIDs.contains(id) ? "failed" : "rendered"),
                    "job \(id) (\(assetOf[id] ?? "?")): \(result["status"] ?? "-") \(result["reason"] ?? "")")
            #expect([victimName, survivorName].contains(result["consumer"] ?? ""), "result \(id) from \(result["consumer"] ?? "-")")
        }
        let resultByID = Dictionary(results.map { ($0["id"] ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
        for id in orphaned {
            #expect(resultByID[id]?["consumer"] == survivorName, "orphaned job \(id) not taken over: \(resultByID[id] ?? [:])")
        }
        #expect(try redis.pendingCount("s") == 0)
        let dead = try redis.entries("s:dead")
        #expect(dead.count == corruptIDs.count && Set(dead.compactMap { $0["id"] }) == corruptIDs,
                "dead letters \(dead.compactMap { $0["asset"] }) vs corrupt jobs \(corruptIDs.count)")
        for letter in dead {
            #expect(letter["reason"]?.contains("not a decodable image") == true, "dead \(letter)")
        }
    }

    /// A consumer frozen (SIGSTOP) with jobs in hand, whose jobs were taken over meanwhile, wakes
    /// up and finishes them too: the script must refuse its late results (exactly one per job).
    @Test func aStalledConsumerWakingUpAddsNoSecondResult() throws {
        let redis = try RedisFixture()
        let valid = Array(try Self.validPNGSuite().prefix(100))
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(valid, into: assets)
        let commands = valid.flatMap { asset in ["large", "normal"].map { "XADD s * job '{\"asset\": \"\(asset)\", \"kinds\": [\"\($0)\"]}'\n" } }
        let ids = try redis.cli(stdin: commands.joined()).split(separator: "\n").map(String.init)
        try #require(ids.count == 200)
        let sleeper = try consume(redis, "?claim-idle-ms=300", assets: assets, cache: "cache-a")
        let sleeperName = Self.consumerName(sleeper.pid)
        var held: [String] = []
        let deadline = Date().addingTimeInterval(30)
        // Freeze it once it has finished some jobs and holds others.
        while Date() < deadline, sleeper.isRunning {
            kill(sleeper.pid, SIGSTOP)
            if (Int(try redis.cli("XLEN", "s:results")) ?? 0) >= 10 {
                held = try redis.pendingDetails("s").filter { $0.consumer == sleeperName }.map(\.id)
                if !held.isEmpty { break }
            }
            kill(sleeper.pid, SIGCONT)
            usleep(3_000)
        }
        try #require(!held.isEmpty && sleeper.isRunning, "could not freeze the consumer with jobs in hand")
        let taker = try consume(redis, "?claim-idle-ms=300", assets: assets, cache: "cache-b")
        #expect(taker.end(within: 30).exitCode == 0, "taker: \(taker.stderr.suffix(300))")
        kill(sleeper.pid, SIGCONT)
        #expect(!sleeper.end(within: 30).timedOut, "the woken consumer did not exit")
        let results = try redis.entries("s:results")
        var perID: [String: [String]] = [:]
        for result in results { perID[result["id"] ?? "?", default: []].append(result["consumer"] ?? "?") }
        #expect(Set(perID.keys) == Set(ids) && results.count == ids.count, "\(results.count) results for \(ids.count) jobs")
        for id in held {
            #expect(perID[id] == [Self.consumerName(taker.pid)], "job \(id) held by the frozen consumer: results from \(perID[id] ?? [])")
        }
        #expect(try redis.pendingCount("s") == 0)
    }

    @Test func malformedMessagesAreDeadLetteredAndTheConsumerGoesOn() throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(["basn2c08.png", "basn0g08.png"], into: assets)
        let notJSON = try redis.cli("XADD", "s", "*", "job", "this is not json")
        let noAsset = try redis.cli("XADD", "s", "*", "kinds", "large")
        let unknownKey = try redis.cli("XADD", "s", "*", "job", #"{"asset": "basn2c08.png", "colour": "red"}"#)
        let missingFile = try redis.cli("XADD", "s", "*", "job", #"{"asset": "no/such.png"}"#)
        let goodJSON = try redis.cli("XADD", "s", "*", "job", #"{"asset": "basn2c08.png", "kinds": ["normal"]}"#)
        let goodFields = try redis.cli("XADD", "s", "*", "asset", "basn0g08.png", "kinds", "large,normal", "scale", "2")

        let consumer = try consume(redis, "?claim-idle-ms=200", assets: assets, cache: "cache")
        #expect(consumer.end(within: 30).exitCode == 65, "stderr: \(consumer.stderr)")
        let dead = Dictionary(try redis.entries("s:dead").map { ($0["id"] ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(Set(dead.keys) == [notJSON, noAsset, unknownKey, missingFile])
        #expect(dead[notJSON]?["reason"]?.contains("not a JSON object") == true, "\(dead[notJSON] ?? [:])")
        #expect(dead[notJSON]?["job"] == "this is not json")
        #expect(dead[noAsset]?["reason"]?.contains("no 'asset' field") == true, "\(dead[noAsset] ?? [:])")
        #expect(dead[unknownKey]?["reason"]?.contains("unknown key 'colour'") == true, "\(dead[unknownKey] ?? [:])")
        #expect(dead[missingFile]?["reason"]?.contains("no such asset") == true, "\(dead[missingFile] ?? [:])")
        let results = Dictionary(try redis.entries("s:results").map { ($0["id"] ?? "?", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(results.count == 6)
        for id in [goodJSON, goodFields] { #expect(results[id]?["status"] == "rendered", "\(results[id] ?? [:])") }
        for id in [notJSON, noAsset, unknownKey, missingFile] { #expect(results[id]?["status"] == "failed") }
        #expect(try redis.pendingCount("s") == 0)
    }

    /// The fields form (`asset`, `kinds`, `scale`) is refused where the JSON form would be (an empty
    /// `kinds` used to leave the job pending forever; `scale 9` / `scale two` were taken).
    @Test(arguments: [("kinds", ""), ("kinds", ","), ("scale", "9"), ("scale", "two")])
    func fieldsFormIsValidatedLikeTheJSONForm(_ field: String, _ value: String) throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(["basn2c08.png", "basn0g08.png"], into: assets)
        let bad = try redis.cli("XADD", "s", "*", "asset", "basn2c08.png", field, value)
        let good = try redis.cli("XADD", "s", "*", "asset", "basn0g08.png")
        let consumer = try consume(redis, "?claim-idle-ms=200", assets: assets, cache: "cache")
        #expect(consumer.end(within: 30).exitCode == 65, "\(field)=\(value): exit status; stdout \(consumer.stdout)")
        #expect(try redis.entries("s:dead").compactMap { $0["id"] } == [bad], "\(field)=\(value) not dead-lettered")
        let results = try redis.entries("s:results")
        #expect(results.first { $0["id"] == good }?["status"] == "rendered")
        #expect(results.first { $0["id"] == bad }?["status"] == "failed", "\(field)=\(value): \(results)")
        let pending = try redis.pendingDetails("s")
        #expect(pending.isEmpty, "\(field)=\(value): the job is left pending: \(pending)")
    }

    /// `--kinds ,` leaves no kind to render: a usage error, not jobs silently left pending forever.
    @Test(arguments: [",", ""])
    func anEmptyKindsListIsAUsageError(_ kinds: String) throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(["basn2c08.png"], into: assets)
        let job = try redis.cli("XADD", "s", "*", "asset", "basn2c08.png")
        let consumer = try redis.start(["batch", "--queue", "redis://127.0.0.1:\(redis.port)/s", "--assets", assets.path,
                                        "--cache", redis.scratch.path + "/c", "--kinds", kinds, "--json"])
        let status = consumer.end(within: 20).exitCode
        let results = try redis.entries("s:results").count, pending = (try? redis.pendingDetails("s")) ?? []
        #expect(status == 64, "--kinds '\(kinds)': exit \(String(describing: status)), \(results) results, pending \(pending) (job \(job))")
        #expect(pending.isEmpty, "--kinds '\(kinds)': job left pending with no result: \(pending)")
    }

    @Test func aJobDeliveredTooOftenIsDeadLetteredAndAcknowledged() throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(["basn2c08.png", "basn0g08.png"], into: assets)
        try redis.cli("XGROUP", "CREATE", "s", "thumbd", "0", "MKSTREAM")
        let killer = try redis.cli("XADD", "s", "*", "job", #"{"asset": "basn2c08.png"}"#)
        let next = try redis.cli("XADD", "s", "*", "job", #"{"asset": "basn0g08.png"}"#)
        // A consumer that keeps dying on it: read once, then claimed again and again.
        _ = try redis.cli("XREADGROUP", "GROUP", "thumbd", "ghost", "COUNT", "1", "STREAMS", "s", ">")
        for _ in 0..<3 { _ = try redis.cli("XCLAIM", "s", "thumbd", "ghost", "0", killer) }
        let before = try redis.pendingDetails("s")
        try #require(before.count == 1 && before[0].id == killer && before[0].deliveries == 4, "\(before)")

        let consumer = try consume(redis, "?max-deliveries=2&claim-idle-ms=100", assets: assets, cache: "cache")
        #expect(consumer.end(within: 30).exitCode == 65, "stderr: \(consumer.stderr)")
        let dead = try redis.entries("s:dead")
        #expect(dead.count == 1 && dead.first?["id"] == killer, "\(dead)")
        let reason = dead.first?["reason"] ?? ""
        #expect(reason.range(of: #"delivered [0-9]+ times"#, options: .regularExpression) != nil, "reason: \(reason)")
        #expect(dead.first?["job"] == #"{"asset": "basn2c08.png"}"#)
        let results = try redis.entries("s:results")
        #expect(results.first { $0["id"] == killer }?["status"] == "failed")
        #expect(results.first { $0["id"] == next }?["status"] == "rendered")
        let pending = try redis.pendingDetails("s")
        #expect(pending.isEmpty, "left pending: \(pending)")
    }

    @Test func badURLIsAUsageErrorAndAnUnreachableServerIsUnavailable() throws {
        let fixture = try RedisFixture(startServer: false)
        let assets = fixture.scratch.appendingPathComponent("assets")
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        // Each refusal names the part at fault; none echoes the URL, which may hold a password.
        for (url, why) in [("redis://x", "names no stream"), ("redis://127.0.0.1:6379/", "names no stream"),
                           ("http://127.0.0.1/s", "is not a redis:// URL"), ("redis://127.0.0.1/s?claim-idle-ms=0", "claim-idle-ms must be"),
                           ("redis://127.0.0.1/s?max-deliveries=x", "max-deliveries must be"),
                           ("redis://u:hunter2@127.0.0.1/s?colour=red", "unknown parameter 'colour'"),
                           ("redis://:hunter2@127.0.0.1/s?claim-idle-ms=99999999999", "claim-idle-ms must be"),
                           ("redis://127.0.0.1/s?a%1B%5B2Jb=1", "unknown parameter 'a?[2Jb'")] {
            let child = try fixture.start(["batch", "--queue", url, "--assets", assets.path, "--cache", fixture.scratch.path + "/c"])
            #expect(child.end(within: 20).exitCode == 64, "\(url): \(child.stderr)")
            #expect(child.stderr.contains("--queue must be redis://") && child.stderr.contains(why), "\(url): \(child.stderr)")
            #expect(!child.stderr.contains("hunter2"), "the password was echoed: \(child.stderr)")
        }
        // Nothing listens on the fixture's port (no server was started).
        let child = try fixture.start(["batch", "--queue", "redis://127.0.0.1:\(fixture.port)/s", "--assets", assets.path,
                                       "--cache", fixture.scratch.path + "/c"])
        #expect(child.end(within: 20).exitCode == 69, "stderr: \(child.stderr)")
        #expect(child.stderr.contains("127.0.0.1:\(fixture.port)") && child.stderr.lowercased().contains("refused"), "\(child.stderr)")
    }

    /// Issue 37, item 10: a drain (no `--follow`) met a Redis restart with exit 69 ("finish job
    /// …: Server closed the connection"), the rest of the stream undone. It waits Redis out with
    /// the follower's backoff and ends when the stream is drained: 0, every job one result (those
    /// in hand when the connection dropped too), nothing pending.
    @Test func aDrainRidesOutARedisRestartAndLeavesEveryJobOneResult() throws {
        let redis = try RedisFixture(appendOnly: true)
        let valid = Array(try Self.validPNGSuite().prefix(120))
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(valid, into: assets)
        let ids = try redis.cli(stdin: valid.map { "XADD s * job '{\"asset\": \"\($0)\"}'\n" }.joined()).split(separator: "\n").map(String.init)
        try #require(ids.count == valid.count)
        let consumer = try consume(redis, "?claim-idle-ms=60000", assets: assets, cache: "cache")
        let name = Self.consumerName(consumer.pid)
        // Frozen once it has finished some jobs and holds others: the restart lands mid-drain.
        var held: [String] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, consumer.isRunning {
            kill(consumer.pid, SIGSTOP)
            if (Int(try redis.cli("XLEN", "s:results")) ?? 0) >= 5 {
                held = try redis.pendingDetails("s").filter { $0.consumer == name }.map(\.id)
                if !held.isEmpty { break }
            }
            kill(consumer.pid, SIGCONT)
            usleep(3_000)
        }
        try #require(!held.isEmpty && consumer.isRunning, "could not freeze the consumer with jobs in hand: \(consumer.stderr.suffix(400))")
        let resultsBefore = try redis.entries("s:results").count
        redis.killServer()
        kill(consumer.pid, SIGCONT)
        // It meets a dead server (its finishes and reads fail) for a while before Redis is back.
        #expect(poll(timeout: .seconds(30)) { consumer.stderr.contains("connection lost") || !consumer.isRunning },
                "\(consumer.stderr.suffix(400))")
        usleep(500_000)
        try redis.restartServer()
        let ended = consumer.end(within: 120)
        #expect(ended.exitCode == 0, "exit \(String(describing: ended.exitCode)) after a Redis restart: \(ended.stderr.suffix(600))")
        #expect(ended.stderr.contains("connected after"), "\(ended.stderr.suffix(600))")
        let results = try redis.entries("s:results")
        var perID: [String: Int] = [:]
        for result in results { perID[result["id"] ?? "?", default: 0] += 1 }
        #expect(resultsBefore < ids.count, "the restart came after the drain")
        #expect(Set(perID.keys) == Set(ids), "\(perID.count) of \(ids.count) jobs have a result")
        #expect(perID.values.allSatisfy { $0 == 1 }, "jobs with more than one result: \(perID.filter { $0.value != 1 })")
        for id in held { #expect(perID[id] == 1, "job \(id), in hand at the restart: \(perID[id] ?? 0) results") }
        #expect(results.allSatisfy { $0["status"] == "rendered" }, "\(results.filter { $0["status"] != "rendered" })")
        #expect(try redis.pendingCount("s") == 0)
    }

    /// Issue 37, item 6: a job's asset name went raw to stderr, where a line feed and an ESC
    /// forged lines of their own (in the journal, on the operator's terminal). Still named, on
    /// one line, with its control characters shown as `\xNN`.
    @Test func aJobsAssetNameReachesStderrWithoutControlCharacters() throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try Self.copyAssets(["basn2c08.png"], into: assets)
        let hostile = "evil\nthumbd: warning: forged\u{1b}[31m.png"
        let id = try redis.cli("XADD", "s", "*", "asset", hostile)
        let consumer = try consume(redis, "?claim-idle-ms=200", assets: assets, cache: "cache")
        let ended = consumer.end(within: 30)
        #expect(ended.exitCode == 65, "\(ended.stderr)")
        #expect(try redis.entries("s:results").first { $0["id"] == id }?["status"] == "failed")
        let control = ended.stderrData.filter { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }
        #expect(control.isEmpty, "raw control bytes \(control) on stderr: \(ended.stderr.debugDescription)")
        #expect(!ended.stderr.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, "C1 controls on stderr")
        let lines = ended.stderr.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("thumbd: warning: forged") }, "a forged line: \(ended.stderr)")
        #expect(lines.contains { $0.contains("evil") && $0.contains("forged\\x1b[31m.png") }, "the job is not named: \(ended.stderr)")
    }
}
