import Foundation
import Testing
import ThumbPipeline
import ThumbSystem
import ThumbConfiguration
import ThumbTestSupport
@testable import ThumbBatch

/// What a follower meets from a Redis that is up but not well (`FakeRedis`): "not now" replies,
/// connections accepted and dropped, AUTH failures that are not about the credentials, and
/// arguments with a NUL inside.
@Suite struct RedisResilienceTests {
    static let ok = "+OK\r\n"
    /// XAUTOCLAIM's reply when nothing is idle long enough: next cursor, no entries, no deleted ids.
    static let nothingToClaim = "*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n"

    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var kept: [String] = []
        var all: [String] { lock.withLock { kept } }
        func append(_ line: String) { lock.withLock { kept.append(line) } }
    }

    @Test func aRedisStillLoadingItsDataIsWaitedForNotAnError() throws {
        let fake = try FakeRedis { connection, arguments in
            FakeRedis.name(arguments) == "XGROUP" && connection <= 2 ? "-LOADING Redis is loading the dataset in memory\r\n" : Self.ok
        }
        defer { fake.close() }
        let counters = RedisQueueCounters()
        let address = try RedisQueueAddress(validating: "redis://127.0.0.1:\(fake.port)/s")
        let queue = try RedisQueue.following(address, credentials: nil, lifecycle: Lifecycle(), log: nil, counters: counters)
        #expect(queue != nil)
        #expect(fake.connections == 3, "two LOADING answers, then joined")
        #expect(counters.snapshot.connected)
    }

    @Test(arguments: [
        ("-ERR max number of clients reached\r\n", RedisError.Kind.connection),
        ("-LOADING Redis is loading the dataset in memory\r\n", .connection),
        ("-WRONGPASS invalid username-password pair or user is disabled.\r\n", .authentication),
        ("-ERR AUTH <password> called without any password configured for the default user.\r\n", .authentication),
        ("-ERR unknown command 'AUTH'\r\n", .reply),
    ])
    func onlyARefusalOfTheCredentialsIsAnAuthenticationError(reply: String, kind: RedisError.Kind) throws {
        let fake = try FakeRedis { _, arguments in FakeRedis.name(arguments) == "AUTH" ? reply : Self.ok }
        defer { fake.close() }
        do throws(RedisError) {
            _ = try RedisConnection(host: "127.0.0.1", port: fake.port, credentials: RedisCredentials(user: "alice", password: "pw"))
            Issue.record("AUTH answered \(reply) was taken for a success")
        } catch {
            #expect(error.kind == kind, "\(reply): \(error)")
            #expect(!error.description.contains("pw"), "the password is never in an error")
        }
    }

    @Test func argumentsGoOutByteForByteWithANULInside() throws {
        let fake = try FakeRedis { _, _ in Self.ok }
        defer { fake.close() }
        let connection = try RedisConnection(host: "127.0.0.1", port: fake.port)
        _ = try connection.command(["SET", "k\u{0}", "a\u{0}b", ""])
        #expect(fake.commands.last == [Array("SET".utf8), [0x6B, 0], [0x61, 0, 0x62], []])
    }

    @Test func aRedisThatDropsEveryNewConnectionIsRetriedWithTheGrowingBackoff() throws {
        // The first connection joins, then is lost on its read; every later one is dropped on its
        // first command (a proxy with no Redis behind it).
        let fake = try FakeRedis { connection, arguments in
            guard connection == 1 else { return nil }
            switch FakeRedis.name(arguments) {
            case "XGROUP": return Self.ok
            case "XAUTOCLAIM": return Self.nothingToClaim
            default: return nil
            }
        }
        defer { fake.close() }
        let lines = Lines()
        let log = PipelineLog { _, line in lines.append(line) }
        let lifecycle = Lifecycle()
        let counters = RedisQueueCounters()
        let address = try RedisQueueAddress(validating: "redis://127.0.0.1:\(fake.port)/s")
        let queue = try #require(try RedisQueue.following(address, credentials: nil, lifecycle: lifecycle, log: log, counters: counters))
        var waits = 0
        queue.waiting = { waits += 1 }
        Thread.detachNewThread {
            usleep(3_000_000)
            _ = lifecycle.stop()
        }
        #expect(throws: RedisError.self) { try queue.next(mayWait: false) }
        // Waits from 0.1 s doubling, each in the upper half of its step: 0.05 + 0.1 + 0.2 + 0.4
        // + 0.8 = 1.55 s before the fifth try, 3.15 s before the sixth: at most 5 tries in 3 s.
        #expect((3...6).contains(fake.connections), "connections: \(fake.connections)")
        #expect(!lines.all.contains { $0.contains("connected after") }, "\(lines.all)")
        #expect(lines.all.filter { $0.contains("connection lost") }.count == 1, "\(lines.all)")
        #expect(counters.snapshot.reconnects == 1 && !counters.snapshot.connected)
        #expect(waits >= fake.connections - 1, "the watchdog's heartbeat while waiting: \(waits)")
    }

    /// Issue 37, item 10: a draining consumer (no `--follow`) whose connection drops while it
    /// finishes a job (a Redis restart) ran "finish job …: Server closed the connection" into
    /// exit 69. It reconnects with the follower's backoff and runs the same finish again.
    @Test func aDrainingQueueFinishesTheJobInHandOnANewConnection() throws {
        let fake = try FakeRedis { connection, arguments in
            switch FakeRedis.name(arguments) {
            case "XGROUP": return Self.ok
            case "EVAL": return connection == 1 ? nil : ":1\r\n" // the first connection drops on it
            default: return nil
            }
        }
        defer { fake.close() }
        let lines = Lines()
        let counters = RedisQueueCounters()
        let address = try RedisQueueAddress(validating: "redis://127.0.0.1:\(fake.port)/s")
        let queue = try RedisQueue(address: address, log: PipelineLog { _, line in lines.append(line) }, counters: counters)
        #expect(!queue.follows)
        try queue.finish(id: "1-0", asset: "a.png", failure: nil, deadLetter: false)
        let finishes = fake.commands.filter { FakeRedis.name($0) == "EVAL" }
        #expect(finishes.count == 2 && finishes.first == finishes.last, "the same finish, run again: \(finishes.count)")
        #expect(fake.connections == 2)
        let snapshot = counters.snapshot
        #expect(snapshot.rendered == 1 && snapshot.reconnects == 1 && snapshot.connected, "\(snapshot)")
        #expect(lines.all.contains { $0.contains("connection lost") } && lines.all.contains { $0.contains("connected after") }, "\(lines.all)")
    }

    /// What makes running a finish again safe: the script adds a result and acknowledges only
    /// while the job is pending on this consumer, so a finish whose reply was lost with the
    /// connection, run again, adds no second result.
    @Test func aFinishRunAgainAddsNoSecondResult() throws {
        let redis = try RedisFixture()
        try redis.cli("XADD", "s", "*", "asset", "a.png")
        let counters = RedisQueueCounters()
        let queue = try RedisQueue(address: try RedisQueueAddress(validating: "redis://127.0.0.1:\(redis.port)/s"), counters: counters)
        guard case .job(let job) = try queue.next(mayWait: false), let id = job.origin else {
            throw TestFailure("the queue handed out no job")
        }
        try queue.finish(id: id, asset: job.asset, failure: nil, deadLetter: false)
        try queue.finish(id: id, asset: job.asset, failure: nil, deadLetter: false)
        let results = try redis.entries("s:results")
        #expect(results.count == 1 && results.first?["id"] == id, "\(results)")
        #expect(try redis.pendingCount("s") == 0)
        #expect(counters.snapshot.rendered == 1)
    }
}
