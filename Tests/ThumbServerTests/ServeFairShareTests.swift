import Foundation
import Testing
import ThumbAccess

/// Issue 23, fair shares: each principal's bucket of cold renders, answered 429 with
/// Retry-After (after a pause, so that a caller that ignores Retry-After cannot spin on
/// refusals); hits, other principals and operators are not charged. The renderers each
/// principal may hold, and the round over principals, are the job table's (`JobTableShareTests`);
/// what they buy under a flood is measured in Benchmarks/fair-share-bench.sh.
@Suite(.serialized) struct ServeFairShareTests {
    static let tokens = ["flood": "flood-token-for-tests", "app": "app-token-for-tests", "ops": "ops-token-for-tests"]

    func daemon(port: UInt16, fairShare: [String: Any]) throws -> ServeDaemon {
        let tokens: [[String: Any]] = Self.tokens.map { name, secret in
            ["name": name, "role": name == "ops" ? "operator" : "client", "sha256": Digest.hex(Digest.sha256(Array(secret.utf8)))]
        }
        let daemon = try ServeDaemon(config: ServeDaemon.config(server: ["listen": "127.0.0.1:\(port)"],
                                                                extra: ["access": ["tokens": tokens, "fairShare": fairShare]]),
                                     assets: ["a.jpg": ServePaths.samples + "/landscape-exif6.jpg"])
        try daemon.start()
        return daemon
    }

    func get(_ port: UInt16, _ path: String, as name: String) throws -> (answer: ServeResponse, seconds: Double) {
        let start = Date()
        let answer = try ServeCurl.request(url: "http://127.0.0.1:\(port)" + path, headers: ["Authorization: Bearer \(Self.tokens[name]!)"])
        return (answer, Date().timeIntervalSince(start))
    }

    @Test("a principal past its bucket of cold renders gets 429 tooManyRequests with Retry-After, after a pause; its hits, another principal and an operator are not charged")
    func bucketOfColdRenders() throws {
        let port = try ServeEndpoint.freePort()
        let daemon = try daemon(port: port, fairShare: ["rendersPerSecond": 0.01, "burstRenders": 2])
        defer { _ = daemon.stop() }
        for size in [40, 41] {
            let (answer, _) = try get(port, "/v1/thumbnails/\(size)x\(size),fill/a.jpg", as: "flood")
            #expect(answer.status == 200, "\(answer.summary)")
        }
        let (refused, seconds) = try get(port, "/v1/thumbnails/42x42,fill/a.jpg", as: "flood")
        #expect(refused.status == 429 && refused.errorCode == "tooManyRequests", "\(refused.summary)")
        let retryAfter = Int(refused.headers["retry-after"] ?? "") ?? 0
        #expect(retryAfter >= 1, "\(refused.summary)")
        // A lower bound only: the daemon held the refusal back (a slow machine only adds to it).
        #expect(seconds >= 0.9, "the 429 came at once (\(seconds) s): a client ignoring Retry-After could spin on it")
        #expect(try get(port, "/v1/thumbnails/40x40,fill/a.jpg", as: "flood").answer.status == 200, "a hit costs nothing")
        #expect(try get(port, "/v1/thumbnails/43x43,fill/a.jpg", as: "app").answer.status == 200, "another principal's bucket")
        for size in 44...46 {
            #expect(try get(port, "/v1/thumbnails/\(size)x\(size),fill/a.jpg", as: "ops").answer.status == 200, "operators are not rationed")
        }
        let metrics = try get(port, "/metrics", as: "ops").answer
        #expect(ServeMetrics(metrics.text)["thumbd_fair_share_refused_renders_total"] == 1, "\(metrics.text)")
    }
}
