import Foundation
import Testing
import ThumbTestSupport
import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11 item 9: at 1M entries the daemon took 38–41 s to start, ignored SIGTERM meanwhile,
/// and `/healthz` said 200 long before it was ready. Now it serves hits from the index at once,
/// reconciles in the background, says when it is done on `/readyz`, and stops when told at any
/// moment. `THUMBD_TEST_HOLD` (a test hook; SIGUSR2 opens it) holds start-up at a chosen point.
@Suite("thumbd serve: start-up")
struct ServeStartupTests {
    static let image = ServePaths.samples + "/pngsuite-basn6a08-alpha.png"

    /// A daemon that has rendered one thumbnail into its cache and stopped.
    func daemonWithACachedThumbnail(config: [String: Any] = ServeDaemon.config()) throws -> ServeDaemon {
        let daemon = try ServeDaemon(config: config, assets: ["small.png": Self.image])
        try daemon.start()
        let first = try daemon.request("/v1/thumbnails/large/small.png")
        try #require(first.status == 200, "\(first.summary)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
        return daemon
    }

    @Test("held reconcile: hits are served from the index, /readyz says 503 with what is pending, then 200")
    func servesHitsBeforeReadyThenReady() throws {
        let daemon = try daemonWithACachedThumbnail()
        try daemon.start(environment: ["THUMBD_TEST_HOLD": "reconcile"])
        let pending = try daemon.request("/readyz")
        #expect(pending.status == 503, "\(pending.summary)")
        #expect(pending.json["status"] as? String == "starting")
        #expect(pending.json["pending"] as? [String] == ["cache", "assets"], "\(pending.summary)")
        #expect(try daemon.request("/healthz").status == 200)
        let hit = try daemon.request("/v1/thumbnails/large/small.png")
        #expect(hit.status == 200 && ServeImageHeader.size(hit.body) != nil, "\(hit.summary)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_cache_hits_total{level=\"disk\"}"] == 1, "\(metrics.text)")
        #expect(metrics["thumbd_cache_misses_total"] == 0)
        #expect(metrics["thumbd_reconcile_pending{part=\"cache\"}"] == 1)
        #expect(metrics["thumbd_reconcile_pending{part=\"assets\"}"] == 1)

        daemon.signal(SIGUSR2)
        try servePoll(timeout: 20, "/readyz 200") { try daemon.request("/readyz").status == 200 }
        #expect(try daemon.request("/readyz").json["status"] as? String == "ready")
        let after = try daemon.metrics()
        #expect(after["thumbd_reconcile_pending{part=\"cache\"}"] == 0 && after["thumbd_reconcile_pending{part=\"assets\"}"] == 0)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// Before: signals were taken only by the main loop, which began after the reconcile.
    @Test("SIGTERM while the background reconcile is held: the daemon stops at once, exit 0, the index closed")
    func sigtermDuringHeldReconcile() throws {
        let daemon = try daemonWithACachedThumbnail()
        try daemon.start(environment: ["THUMBD_TEST_HOLD": "reconcile"])
        #expect(try daemon.request("/readyz").status == 503)
        daemon.signal(SIGTERM)
        #expect(daemon.child?.wait(timeout: 20)?.status == 0, "\(daemon.log)")
        #expect(daemon.log.contains("<5>stopped"), "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
        // The lock is released and the index whole: it opens again with its thumbnail.
        let cache = try ThumbnailStore(directory: daemon.cache, byteBudget: 1 << 30)
        #expect(cache.statistics.entries == 1)
        cache.close()
    }

    @Test("SIGTERM before the cache is even open: exit 0, nothing left behind")
    func sigtermBeforeThePipelineIsOpen() throws {
        let daemon = try daemonWithACachedThumbnail()
        try daemon.start(environment: ["THUMBD_TEST_HOLD": "open"], waitForReady: false)
        try daemon.waitForLog("<6>start-up held before opening the cache")
        daemon.signal(SIGTERM)
        #expect(daemon.child?.wait(timeout: 20)?.status == 0, "\(daemon.log)")
        #expect(daemon.log.contains("<5>stop requested during start-up"), "\(daemon.log)")
        #expect(!daemon.log.contains("thumbd serving"), "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }

    /// The documented choice: READY=1 when the socket serves (dependants may start: hits are
    /// answered), with a STATUS that says what is still reconciling; readiness for traffic
    /// that needs the reconcile done is `/readyz`.
    @Test("READY=1 once serving, while reconciling (STATUS says so); STATUS follows to done")
    func readyWhenServingStatusWhileReconciling() throws {
        let daemon = try daemonWithACachedThumbnail()
        let notify = try ServeSocket(SOCK_DGRAM, at: daemon.directory + "/notify.sock")
        try daemon.start(environment: ["THUMBD_TEST_HOLD": "reconcile", "NOTIFY_SOCKET": notify.path])
        var messages: [String] = []
        let ready = try notify.receive(timeout: 15, into: &messages) { $0.contains("READY=1") }
        #expect(ready.contains("STATUS=serving, reconciling cache 0/256 shards"), "\(ready)")
        #expect(try daemon.request("/v1/thumbnails/large/small.png").status == 200)
        daemon.signal(SIGUSR2)
        let done = try notify.receive(timeout: 20, into: &messages) { $0.hasPrefix("STATUS=serving: ") }
        #expect(done.contains("backlog 0"), "\(done)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// A pre-rendered kind over 40 photos with a queue of 4 (before: 3 pre-renders accepted,
    /// the rest dropped until a restart), killed mid-drain: every asset is cached or waits in
    /// the index's backlog, and the restarted daemon finishes them.
    @Test("kill -9 mid-drain: every asset is cached or in the backlog; the restart finishes the rest")
    func killedMidDrainLosesNothing() throws {
        var kinds = ServeDaemon.kinds
        kinds["tile"] = ["width": 200, "height": 200, "mode": "fit", "pregenerate": true]
        let photos = try ServePaths.largePhotos()
        let assets = Dictionary(uniqueKeysWithValues: (0..<40).map { ("p\($0).jpg", photos[$0 % photos.count]) })
        let config = ServeDaemon.config(workers: 1, kinds: kinds, server: ["maxQueuedJobs": 4])
        let daemon = try ServeDaemon(config: config, assets: assets)
        try daemon.start()
        try daemon.waitForMetrics("some of the backlog drained", timeout: 60) { $0["thumbd_backlog_drained_total"] >= 3 }
        daemon.signal(SIGKILL)
        _ = daemon.child?.wait(timeout: 20)?.status

        let cached = Set(try Self.column(daemon.cache, "SELECT DISTINCT asset_path FROM entries"))
        let waiting = Set(try Self.column(daemon.cache, "SELECT asset_path FROM backlog"))
        #expect(!waiting.isEmpty, "the drain was over before the kill")
        #expect(cached.union(waiting) == Set(assets.keys), "lost: \(Set(assets.keys).subtracting(cached.union(waiting)).sorted())")

        try daemon.start()
        try daemon.waitForMetrics("the backlog drained", timeout: 120) { metrics in
            metrics["thumbd_backlog_assets"] == 0 && metrics["thumbd_backlog_in_flight_assets"] == 0
                && metrics["thumbd_reconcile_pending{part=\"assets\"}"] == 0
        }
        #expect(Set(try Self.column(daemon.cache, "SELECT DISTINCT asset_path FROM entries")) == Set(assets.keys))
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// One column of a query on the cache index, read with the sqlite3 command-line tool.
    static func column(_ cache: String, _ sql: String) throws -> [String] {
        let sqlite = try ChildProcess.run("/usr/bin/sqlite3", [cache + "/index.sqlite", sql], environment: ChildProcess.cleanEnvironment,
                                          timeout: 20)
        guard sqlite.exitCode == 0 else { throw TestFailure("sqlite3: \(sqlite.summary)") }
        return sqlite.stdout.split(separator: "\n").map(String.init)
    }
}
