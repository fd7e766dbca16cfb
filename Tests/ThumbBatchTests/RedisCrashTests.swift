import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 8, item 4 on Redis: `max-deliveries` also ends a crash loop. A job whose consumers die
/// while they hold it (SIGKILL, as a renderer crash would) is taken over, and once delivered more
/// than `max-deliveries` times it is dead-lettered instead of killing every next consumer.
@Suite(.serialized) struct RedisCrashTests {
    @Test func aJobWhoseConsumersKeepDyingIsDeadLettered() throws {
        let redis = try RedisFixture()
        let assets = redis.scratch.appendingPathComponent("assets")
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        let photo = try #require(try CorpusManifest.jpegAndPNG().first { $0.set == "large-photos" && $0.status == "OK" })
        try FileManager.default.copyItem(atPath: BatchPaths.corpus + "/" + photo.relativePath, toPath: assets.path + "/big.jpg")
        // A slow job (a 12 MP photo at xx-large@4x): each consumer is killed while it renders it.
        let id = try redis.cli("XADD", "s", "*", "job", #"{"asset": "big.jpg", "kinds": ["xx-large"], "scale": 4}"#)
        let arguments = ["batch", "--queue", "redis://127.0.0.1:\(redis.port)/s?claim-idle-ms=100&max-deliveries=2",
                         "--assets", assets.path, "--cache", redis.scratch.path + "/cache", "--workers", "1", "--json"]
        for delivery in 1...2 {
            let consumer = try redis.start(arguments)
            let name = RedisQueueTests.consumerName(consumer.pid)
            let deadline = Date().addingTimeInterval(20)
            var holding = false
            while Date() < deadline && consumer.isRunning && !holding {
                holding = ((try? redis.pendingDetails("s")) ?? []).contains { $0.id == id && $0.consumer == name }
                if !holding { usleep(5_000) }
            }
            try #require(holding && consumer.isRunning, "delivery \(delivery): the consumer never held the job: \(consumer.stderr)")
            consumer.kill()
            usleep(200_000) // past claim-idle-ms: the next consumer may take it over
        }
        let last = try redis.start(arguments)
        #expect(last.end(within: 30).exitCode == 65, "stderr: \(last.stderr)")
        let dead = try redis.entries("s:dead")
        #expect(dead.count == 1 && dead.first?["id"] == id, "\(dead)")
        #expect(dead.first?["reason"]?.contains("delivered 3 times") == true, "\(dead)")
        #expect(try redis.entries("s:results").first { $0["id"] == id }?["status"] == "failed")
        #expect(try redis.pendingCount("s") == 0)
    }
}
