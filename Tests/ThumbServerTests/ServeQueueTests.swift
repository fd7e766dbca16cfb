import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd serve` with `"queue"` in its config (issue 27): the daemon consumes a Redis stream
/// through its own pipeline while it serves, into the cache it serves from; its `/metrics` and
/// STATUS carry the consumer's counts and the group's lag.
@Suite("thumbd serve: the Redis queue consumer")
struct ServeQueueTests {
    /// A private redis-server on a free loopback port, killed at the end.
    final class Redis {
        let server: ChildProcess
        let port: UInt16
        let scratch: ScratchDirectory

        init() throws {
            let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map(String.init)
            guard let binary = paths.map({ $0 + "/redis-server" }).first(where: FileManager.default.isExecutableFile) else {
                throw TestFailure("redis-server not found on PATH: apt-get install redis-server")
            }
            scratch = try ScratchDirectory("serve-redis")
            port = try ServeEndpoint.freePort()
            server = try ChildProcess(binary, ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                               "--dir", scratch.path], stdout: .captured, stderr: .captured)
            try servePoll(timeout: 10, "redis-server on \(port)") { (try? cli("PING")) == "PONG" }
        }

        deinit {
            server.kill()
            scratch.remove()
        }

        @discardableResult
        func cli(_ arguments: String...) throws -> String {
            let result = try ChildProcess.run("/usr/bin/env", ["redis-cli", "-p", "\(port)"] + arguments, timeout: 20)
            guard result.exitCode == 0 else { throw TestFailure("redis-cli \(arguments): \(result.summary)") }
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("jobs sent while the daemon serves are rendered into its cache and then served as hits; metrics count them")
    func jobsSentWhileServingAreServedAsHits() throws {
        let redis = try Redis()
        let photos = try ServePaths.largePhotos()
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1, extra: ["queue": "redis://127.0.0.1:\(redis.port)/jobs"]),
                                     assets: ["a.jpg": photos[0], "b.jpg": photos[1]])
        try daemon.start()
        // The consumer joined: the group exists.
        try servePoll(timeout: 15, "the consumer group\n\(daemon.log)") {
            (try? redis.cli("XINFO", "GROUPS", "jobs"))?.contains("thumbd") == true
        }
        try redis.cli("XADD", "jobs", "*", "job", #"{"asset": "a.jpg", "kinds": ["large"]}"#)
        try redis.cli("XADD", "jobs", "*", "job", #"{"asset": "b.jpg", "kinds": ["large", "normal"]}"#)
        try redis.cli("XADD", "jobs", "*", "job", #"{"asset": "missing.jpg", "kinds": ["large"]}"#)
        try servePoll(timeout: 30, "three results\n\(daemon.log)") { (try? redis.cli("XLEN", "jobs:results")) == "3" }
        #expect(try redis.cli("XLEN", "jobs:dead") == "1", "the missing asset is a dead letter")
        let statuses = try redis.cli("XRANGE", "jobs:results", "-", "+")
        #expect(statuses.components(separatedBy: "rendered").count - 1 == 2, "\(statuses)")

        // What the jobs rendered is served from the cache: asking renders nothing more.
        let rendered = try daemon.metrics().sum("thumbd_render_seconds_count")
        #expect(rendered >= 3, "the queue's renders: \(rendered)")
        for path in ["/v1/thumbnails/large/a.jpg", "/v1/thumbnails/large/b.jpg", "/v1/thumbnails/normal/b.jpg"] {
            let answer = try daemon.request(path)
            #expect(answer.status == 200, "\(path): \(answer.summary)")
        }
        let metrics = try daemon.metrics()
        #expect(metrics.sum("thumbd_render_seconds_count") == rendered, "a queued thumbnail was rendered again")
        #expect(metrics["thumbd_stream_jobs_total{outcome=\"rendered\"}"] == 2)
        #expect(metrics["thumbd_stream_jobs_total{outcome=\"dead_lettered\"}"] == 1)
        #expect(metrics["thumbd_stream_connected"] == 1)
        #expect(metrics["thumbd_stream_pending"] == 0)
        // Every stream family the dashboard and the alerts query is exported by a consumer.
        for file in ["grafana-dashboard.json", "thumbd-alerts.yml"] {
            let referenced = try MonitoringContractTests.referencedMetrics(file).filter { $0.hasPrefix("thumbd_stream_") }
            #expect(!referenced.isEmpty, "\(file) shows nothing of the stream consumer")
            let missing = referenced.filter { !metrics.text.contains("# TYPE \($0) ") }.sorted()
            #expect(missing.isEmpty, "\(file) queries stream metrics /metrics does not export: \(missing)")
        }

        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
