import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch --queue URL --follow` (issue 27): consumers that wait for work, survive a
/// Redis restart, stop on SIGTERM with 0, and authenticate.
@Suite(.serialized) struct RedisFollowTests {
    static let poison = "xcsn0g01.png"

    func follower(_ redis: RedisFixture, _ query: String = "?claim-idle-ms=1500", assets: URL, out: URL, name: String,
                  extra: [String] = []) throws -> ChildProcess {
        try redis.start(["batch", "--queue", "redis://127.0.0.1:\(redis.port)/s\(query)", "--follow", "--assets", assets.path,
                         "--cache", redis.scratch.appendingPathComponent("cache-\(name)").path, "--out-dir", out.path,
                         "--kinds", "large", "--workers", "1", "--json"] + extra)
    }

    /// Waits (polling Redis, which is the ledger) until `condition` holds; false at the deadline.
    func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    /// A sample's value in Prometheus text, or nil.
    static func sample(_ text: String, _ name: String) -> Int? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Int(line.dropFirst(name.count + 1))
        }
        return nil
    }

    func resultCount(_ redis: RedisFixture) -> Int { Int((try? redis.cli("XLEN", "s:results")) ?? "") ?? 0 }

    @Test func followersSurviveAKilledPeerAndARedisRestartAndStopWithZero() throws {
        let redis = try RedisFixture(appendOnly: true)
        let valid = Array(try RedisQueueTests.validPNGSuite().prefix(120))
        let assets = redis.scratch.appendingPathComponent("assets")
        let out = redis.scratch.appendingPathComponent("out")
        try RedisQueueTests.copyAssets(valid + [Self.poison], into: assets)
        func add(_ names: [String]) throws -> [String] {
            let commands = names.map { "XADD s * job '{\"asset\": \"\($0)\"}'\n" }.joined()
            return try redis.cli(stdin: commands).split(separator: "\n").map(String.init)
        }
        // Half the jobs (and the poison one) before the consumers start, half after the restart:
        // followers wait for work instead of ending when the stream is drained.
        let firstNames = Array(valid.prefix(60)) + [Self.poison]
        var ids = try add(firstNames)
        var assetOf = Dictionary(uniqueKeysWithValues: zip(ids, firstNames))
        let victim = try follower(redis, assets: assets, out: out, name: "victim")
        let metricsPort = try RedisFixture.freePort()
        let survivors = [try follower(redis, assets: assets, out: out, name: "a", extra: ["--metrics-listen", "127.0.0.1:\(metricsPort)"]),
                         try follower(redis, assets: assets, out: out, name: "b")]

        #expect(waitUntil(seconds: 60) { resultCount(redis) >= 20 }, "no results: \(victim.stderr.suffix(400))")
        try #require(victim.isRunning, "the victim ended on its own: \(victim.stderr.suffix(400))")
        victim.kill()
        redis.killServer()
        usleep(1_500_000) // the survivors meet a dead server and back off
        try redis.restartServer()
        let secondNames = Array(valid.dropFirst(60))
        let more = try add(secondNames)
        ids += more
        for (id, name) in zip(more, secondNames) { assetOf[id] = name }

        // The victim's jobs are taken over after claim-idle-ms; every job ends with a result.
        #expect(waitUntil(seconds: 120) { resultCount(redis) >= ids.count },
                "\(resultCount(redis)) of \(ids.count) results; survivor: \(survivors[0].stderr.suffix(600))")
        for survivor in survivors {
            #expect(survivor.isRunning, "a follower ended: \(survivor.stderr.suffix(600))")
        }
        let results = try redis.entries("s:results")
        var perID: [String: Int] = [:]
        for result in results { perID[result["id"] ?? "?", default: 0] += 1 }
        #expect(Set(perID.keys) == Set(ids), "result ids not the job ids")
        #expect(perID.values.allSatisfy { $0 == 1 }, "jobs with more than one result: \(perID.filter { $0.value != 1 }.prefix(5))")
        for result in results {
            let id = result["id"] ?? "?"
            let expected = assetOf[id] == Self.poison ? "failed" : "rendered"
            #expect(result["status"] == expected, "job \(id) (\(assetOf[id] ?? "?")): \(result["status"] ?? "-") \(result["reason"] ?? "")")
        }
        let dead = try redis.entries("s:dead")
        #expect(dead.count == 1 && dead.first?["asset"] == Self.poison, "dead letters: \(dead)")
        #expect(try redis.pendingCount("s") == 0)
        // Every good job's thumbnail is in the output tree.
        let written = Set((try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("large@1x").path)) ?? [])
        let missing = valid.filter { name in !written.contains { $0.hasPrefix(name + ".") } }
        #expect(missing.isEmpty, "no output for \(missing.prefix(5))")
        // Both noticed the restart, once each, and said how long it lasted (one that waited in
        // its backoff while the other finished the jobs may say so a few seconds later).
        for survivor in survivors {
            #expect(survivor.stderr.contains("connection lost"), "\(survivor.stderr.suffix(600))")
            #expect(waitUntil(seconds: 20) { survivor.stderr.contains("connected after") }, "\(survivor.stderr.suffix(600))")
        }

        // The first survivor's own /metrics: its share of the jobs, and the one reconnect.
        func scrape() throws -> String {
            try ChildProcess.run("/usr/bin/env", ["curl", "-sf", "http://127.0.0.1:\(metricsPort)/metrics"], timeout: 20).stdout
        }
        let resultsByA = results.filter { $0["consumer"] == RedisQueueTests.consumerName(survivors[0].pid) && $0["status"] == "rendered" }.count
        // Its own connection may come back a little after the other survivor finished the jobs.
        // One finish per lost connection may be unknowable to it: the script ran and was saved
        // in the AOF, its reply died with Redis, and the retry finds the job no longer pending
        // (done by itself, or taken over: the script cannot tell). So its count may be one short
        // of the results that name it, never more than them.
        let agrees = try waitUntil(seconds: 20) {
            let text = try scrape()
            guard let rendered = Self.sample(text, "thumbd_stream_jobs_total{outcome=\"rendered\"}") else { return false }
            return (resultsByA - 1...resultsByA).contains(rendered) && Self.sample(text, "thumbd_stream_connected") == 1
        }
        let scraped = try scrape()
        #expect(agrees, "results by the first survivor: \(resultsByA); its metrics:\n\(scraped)")
        #expect(Self.sample(scraped, "thumbd_stream_reconnects_total") == 1, "\(scraped)")
        for survivor in survivors { survivor.signal(SIGTERM) }
        for survivor in survivors {
            let ended = survivor.end(within: 30)
            #expect(ended.exitCode == 0 && !ended.timedOut, "SIGTERM: \(ended.summary.suffix(600))")
        }
    }

    /// SIGTERM while jobs are in hand: the follower ends with 0, every job it took either has its
    /// one result (its output written whole) or is left pending, and a second follower takes the
    /// rest over: still exactly one result per job.
    @Test func aSIGTERMMidRunLeavesNoHalfWrittenJobAndAnotherFollowerFinishesThem() throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        let out = redis.scratch.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        // The large photos (tens of ms each), copied under several names: each copy is its own
        // asset version, so none is answered from the cache and the run is slow enough to stop.
        let photos = URL(fileURLWithPath: TestPaths.corpus).appendingPathComponent("large-photos")
        let originals = try FileManager.default.contentsOfDirectory(atPath: photos.path).filter { $0.hasSuffix(".jpg") }.sorted()
        try #require(originals.count >= 5, "the corpus's large photos")
        var names: [String] = []
        for copy in 0..<4 {
            for original in originals {
                let name = "c\(copy)-\(original)"
                try FileManager.default.copyItem(at: photos.appendingPathComponent(original), to: assets.appendingPathComponent(name))
                names.append(name)
            }
        }
        let commands = names.map { "XADD s * job '{\"asset\": \"\($0)\"}'\n" }.joined()
        let ids = try redis.cli(stdin: commands).split(separator: "\n").map(String.init)
        try #require(ids.count == names.count)

        let first = try follower(redis, "?claim-idle-ms=500", assets: assets, out: out, name: "first")
        #expect(waitUntil(seconds: 60) { resultCount(redis) >= 2 }, "\(first.stderr.suffix(400))")
        first.signal(SIGTERM)
        let ended = first.end(within: 60)
        #expect(ended.exitCode == 0 && !ended.timedOut, "SIGTERM mid-run: \(ended.summary.suffix(600))")
        let before = try redis.entries("s:results")
        try #require(before.count < ids.count, "the run ended before the SIGTERM: nothing was in hand")
        #expect(Set(before.compactMap { $0["id"] }).count == before.count, "a job with two results")
        // Nothing half-written: no temporary file is left, and every rendered job's output is there.
        let folder = out.appendingPathComponent("large@1x")
        let written = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        #expect(!written.contains { $0.hasPrefix(".") }, "a temporary file left behind: \(written.filter { $0.hasPrefix(".") })")
        for result in before where result["status"] == "rendered" {
            let asset = result["asset"] ?? "?"
            #expect(written.contains { $0.hasPrefix(asset + ".") }, "\(asset) was acknowledged as rendered without its output")
        }

        let second = try follower(redis, "?claim-idle-ms=500", assets: assets, out: out, name: "second")
        #expect(waitUntil(seconds: 120) { resultCount(redis) >= ids.count }, "\(resultCount(redis)) of \(ids.count): \(second.stderr.suffix(600))")
        let results = try redis.entries("s:results")
        var perID: [String: Int] = [:]
        for result in results { perID[result["id"] ?? "?", default: 0] += 1 }
        #expect(Set(perID.keys) == Set(ids) && perID.values.allSatisfy { $0 == 1 }, "results per job: \(perID.filter { $0.value != 1 })")
        #expect(results.allSatisfy { $0["status"] == "rendered" }, "\(results.filter { $0["status"] != "rendered" }.prefix(3))")
        #expect(try redis.pendingCount("s") == 0)
        second.signal(SIGTERM)
        #expect(second.end(within: 30).exitCode == 0)
    }

    @Test func aFollowerStartedBeforeRedisWaitsForItThenConsumes() throws {
        let redis = try RedisFixture(startServer: false)
        let assets = redis.scratch.appendingPathComponent("assets")
        let valid = try RedisQueueTests.validPNGSuite()
        try RedisQueueTests.copyAssets([valid[0]], into: assets)
        let consumer = try follower(redis, assets: assets, out: redis.scratch.appendingPathComponent("out"), name: "early")
        #expect(waitUntil(seconds: 10) { consumer.stderr.contains("Redis is not reachable yet") }, "\(consumer.stderr)")
        usleep(500_000)
        try #require(consumer.isRunning, "the follower gave up on a Redis not up yet: \(consumer.stderr)")
        try redis.restartServer()
        try redis.cli("XADD", "s", "*", "job", #"{"asset": "\#(valid[0])"}"#)
        #expect(waitUntil(seconds: 30) { resultCount(redis) == 1 }, "\(consumer.stderr)")
        #expect(consumer.stderr.contains("connected after"), "\(consumer.stderr)")
        consumer.signal(SIGTERM)
        let ended = consumer.end(within: 30)
        #expect(ended.exitCode == 0, "\(ended.summary)")
    }

    @Test func aPasswordFromAFileOrTheCredentialsDirectoryAuthenticatesAndAWrongOneIsExit78() throws {
        let redis = try RedisFixture(extra: ["--requirepass", "s3cret pass", "--user", "alice", "on", ">alice-pw", "~*", "&*", "+@all"])
        redis.cliAuthentication = ["-a", "s3cret pass", "--no-auth-warning"]
        let assets = redis.scratch.appendingPathComponent("assets")
        try RedisQueueTests.copyAssets(Array(try RedisQueueTests.validPNGSuite().prefix(3)), into: assets)
        let passwordFile = redis.scratch.appendingPathComponent("redis-password")
        try Data("s3cret pass\n".utf8).write(to: passwordFile)
        let url = "redis://127.0.0.1:\(redis.port)/s"
        func once(_ url: String, environment: [String: String] = [:]) throws -> ChildProcess.Result {
            var inherited = ProcessInfo.processInfo.environment
            for name in ["CREDENTIALS_DIRECTORY", "CACHE_DIRECTORY", "NOTIFY_SOCKET"] { inherited[name] = nil }
            var environment = inherited.merging(environment) { _, new in new }
            environment["HOME"] = redis.scratch.path
            let child = try ChildProcess(RedisFixture.thumbd, ["batch", "--queue", url, "--assets", assets.path,
                                                               "--cache", redis.scratch.appendingPathComponent("cache").path,
                                                               "--kinds", "large", "--workers", "1"],
                                         environment: environment, stdout: .captured, stderr: .captured)
            return child.end(within: 60)
        }
        try redis.cli("XADD", "s", "*", "job", #"{"asset": "\#(try RedisQueueTests.validPNGSuite()[0])"}"#)

        let fromFile = try once(url + "?password-file=" + passwordFile.path)
        #expect(fromFile.exitCode == 0, "\(fromFile.summary)")
        #expect(!fromFile.stderr.contains("s3cret"), "the password is never printed")

        let credentials = redis.scratch.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: passwordFile, to: credentials.appendingPathComponent("redis-password"))
        let fromCredential = try once(url, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        #expect(fromCredential.exitCode == 0, "\(fromCredential.summary)")

        let inURL = try once("redis://:s3cret%20pass@127.0.0.1:\(redis.port)/s")
        #expect(inURL.exitCode == 0, "\(inURL.summary)")
        #expect(inURL.stderr.contains("password is in the URL"), "the URL's password is warned about: \(inURL.stderr)")

        // An ACL user: AUTH alice PASSWORD, the password from a file.
        let aliceFile = redis.scratch.appendingPathComponent("alice-password")
        try Data("alice-pw\n".utf8).write(to: aliceFile)
        let alice = try once("redis://alice@127.0.0.1:\(redis.port)/s?password-file=" + aliceFile.path)
        #expect(alice.exitCode == 0, "\(alice.summary)")
        let aliceWrong = try once("redis://alice@127.0.0.1:\(redis.port)/s?password-file=" + passwordFile.path)
        #expect(aliceWrong.exitCode == 78 && aliceWrong.stderr.contains("as user 'alice'"), "\(aliceWrong.summary)")

        try Data("wrong\n".utf8).write(to: passwordFile)
        let wrong = try once(url + "?password-file=" + passwordFile.path)
        #expect(wrong.exitCode == 78, "\(wrong.summary)")
        #expect(wrong.stderr.contains("AUTH") && !wrong.stderr.contains("wrong\n"), "\(wrong.stderr)")
        let none = try once(url)
        #expect(none.exitCode == 78, "no password for a Redis that wants one: \(none.summary)")
        let missing = try once(url + "?password-file=" + redis.scratch.appendingPathComponent("nope").path)
        #expect(missing.exitCode == 78 && missing.stderr.contains("nope"), "\(missing.summary)")
        #expect(try redis.cli("XLEN", "s:results") == "1", "the one job has one result")
    }
}
