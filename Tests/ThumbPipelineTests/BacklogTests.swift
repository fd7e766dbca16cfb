import Dispatch
import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Issue 11 item 5: pre-renders past `maxQueuedJobs` were dropped silently (a cold start over
/// 1M files pre-rendered 65–73k; a 10k-file folder moved in, about half). Now they wait in a
/// backlog in the cache index, drained at batch priority as the queue has room, kept across a
/// shutdown, and counted.
@Suite struct BacklogTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    static let avatar = PipelineFixture.avatar

    /// Small valid PNGs of the corpus (pngsuite's basic ones: 32×32), copied under `folder` as
    /// `count` distinct assets. Returns their relative paths.
    static func addSmallImages(_ count: Int, to folder: String) throws -> [String] {
        let suite = PipelineFixture.corpus + "/pngsuite"
        let sources = try FileManager.default.contentsOfDirectory(atPath: suite)
            .filter { $0.hasPrefix("basn") && $0.hasSuffix(".png") }.sorted()
        try #require(sources.count >= 8, "expected pngsuite's basn*.png in \(suite)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try (0..<count).map { index in
            let name = String(format: "small%03d.png", index)
            try FileManager.default.copyItem(atPath: suite + "/" + sources[index % sources.count], toPath: folder + "/" + name)
            return name
        }
    }

    func configure(_ configuration: inout PipelineConfiguration) {
        configuration.pregenerated = [(Self.avatar, 3)]
        configuration.maxQueuedJobs = 8
    }

    /// Before: the reconcile's `prerender` calls past the batch share of the queue (6 of 8
    /// here) were refused, and nothing asked again until the next start.
    @Test("a cold start over 200 assets with a queue of 8: every one is pre-rendered, and the metrics count them")
    func coldStartPrerendersEveryAsset() async throws {
        let names = try Self.addSmallImages(200, to: fixture.assets + "/many").map { "many/" + $0 }
        let pipeline = try fixture.pipeline(configure)
        let watcher = try pipeline.startWatching()
        defer {
            watcher.stop()
            pipeline.shutdown()
        }
        let assets = fixture.imageNames.count + names.count
        #expect(await eventually(timeout: .seconds(60)) {
            pipeline.startupProgress.isReady && pipeline.metrics.backlog.rows == 0 && pipeline.metrics.backlog.assetsInFlight == 0
        }, "\(pipeline.metrics.backlog)")
        let missing = names.filter { !pipeline.isCached(assetPath: $0, kind: Self.avatar, scale: 3) }
        #expect(pipeline.cacheStatistics.disk.entries == assets, "not cached: \(missing), \(pipeline.metrics.backlog)")
        #expect(missing.isEmpty)
        let backlog = pipeline.metrics.backlog
        // broken.jpg too: its row goes once its render failed for good.
        #expect(backlog.enqueued == assets + 1 && backlog.drained == assets + 1, "\(backlog)")
        #expect(backlog.refused == 0 && backlog.gaveUp == 0)
        #expect(pipeline.metrics.renders == assets + 1)
        #expect(pipeline.startupProgress.isReady)
    }

    /// Before: each `.changed` event of the folder's files called `prerender`, refused once the
    /// batch share was full: about half of a 10k-file folder was pre-rendered.
    @Test("a folder of 200 assets moved in while running: every one is pre-rendered")
    func folderMovedInIsPrerenderedWhole() async throws {
        let pipeline = try fixture.pipeline(configure)
        let watcher = try pipeline.startWatching()
        defer {
            watcher.stop()
            pipeline.shutdown()
        }
        let before = fixture.imageNames.count
        #expect(await eventually(timeout: .seconds(60)) { pipeline.startupProgress.isReady && pipeline.cacheStatistics.disk.entries == before })
        let names = try Self.addSmallImages(200, to: fixture.root + "/incoming")
        try FileManager.default.moveItem(atPath: fixture.root + "/incoming", toPath: fixture.assets + "/incoming")
        #expect(await eventually(timeout: .seconds(60)) { pipeline.cacheStatistics.disk.entries == before + names.count }, "\(pipeline.metrics.backlog)")
        #expect(names.allSatisfy { pipeline.isCached(assetPath: "incoming/" + $0, kind: Self.avatar, scale: 3) })
        #expect(await eventually(timeout: .seconds(60)) { pipeline.metrics.backlog.rows == 0 })
        #expect(pipeline.metrics.overloaded == 0)
    }

    /// A shutdown mid-drain: what was not done yet stays in the index, and a pipeline opened
    /// again drains it by itself — no asset reconcile runs here (no watcher), so nothing but
    /// the persisted backlog can bring those pre-renders about.
    @Test("a pipeline shut down mid-drain and opened again finishes the rest from the index")
    func shutdownMidDrainThenReopenFinishes() async throws {
        let names = try Self.addSmallImages(200, to: fixture.assets + "/many").map { "many/" + $0 }
        var configuration = fixture.configuration(configure)
        configuration.workers = 1
        // The eleventh source opened waits until the shutdown has begun: however loaded the
        // machine, at most eleven assets are done by then and the rest must stay in the index
        // (before, pauses of a few milliseconds per checkpoint let a starved poll see the whole
        // drain finish first).
        let opened = Atomic<Int>(0)
        let resume = DispatchSemaphore(value: 0)
        let first = try ThumbnailPipeline(configuration: configuration, startsWorkers: true, opener: { root in
            OpenObservingRoot(root: root) { _ in
                if opened.wrappingAdd(1, ordering: .relaxed).newValue == 11 { resume.wait() }
            }
        })
        let watcher = try first.startWatching()
        #expect(await eventually(timeout: .seconds(60)) { opened.load(ordering: .relaxed) >= 11 })
        watcher.stop()
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            first.shutdown()
            stopped.signal()
        }
        #expect(await eventually(timeout: .seconds(60)) { first.state.withLock { $0.shuttingDown } })
        resume.signal()
        #expect(await eventually(timeout: .seconds(60)) { stopped.wait(timeout: .now()) == .success })
        // What the index holds now, read without draining anything.
        let allAssets = fixture.imageNames + ["broken.jpg"] + names
        let index = try CacheIndex(directory: fixture.cache, byteBudget: 1 << 30, reconcilesFiles: false)
        let cached = Set(index.indexedAssetPaths(after: "", limit: 10_000))
        let waiting = Set(Self.backlogPaths(BacklogStore(index: index)))
        index.close()
        #expect(waiting.count >= allAssets.count - 11, "\(waiting.count) of \(allAssets.count) left")
        try #require(!waiting.isEmpty, "the drain finished before the shutdown: nothing left to resume")
        // Nothing lost: every asset is cached (or failed, broken.jpg), or waits in the backlog.
        #expect(Set(allAssets) == cached.union(waiting), "lost: \(Set(allAssets).subtracting(cached.union(waiting)).sorted())")

        let second = try fixture.pipeline(configure)
        defer { second.shutdown() }
        #expect(await eventually(timeout: .seconds(60)) { second.metrics.backlog.rows == 0 && second.metrics.backlog.assetsInFlight == 0 },
                "\(second.metrics.backlog)")
        #expect(names.allSatisfy { second.isCached(assetPath: $0, kind: Self.avatar, scale: 3) })
        #expect(second.metrics.backlog.drained == waiting.count)
    }

    @Test("a backlog row whose asset was deleted goes away without a render")
    func deletedAssetsRowGoesAway() async throws {
        let gate = ReconcileGate(held: true)
        let pipeline = try fixture.pipeline {
            configure(&$0)
            $0.reconcileGate = gate
        }
        defer { pipeline.shutdown() }
        // Held: the backlog does not drain before the cache is reconciled.
        pipeline.enqueuePrerenders(["img0.jpg", "img1.jpg"])
        #expect(pipeline.metrics.backlog.rows == 2)
        try FileManager.default.removeItem(atPath: fixture.assets + "/img0.jpg")
        gate.release()
        #expect(await eventually(timeout: .seconds(60)) { pipeline.metrics.backlog.rows == 0 && pipeline.metrics.backlog.assetsInFlight == 0 })
        #expect(pipeline.metrics.backlog.drained == 2)
        #expect(pipeline.metrics.renders == 1)
        #expect(pipeline.isCached(assetPath: "img1.jpg", kind: Self.avatar, scale: 3))
        #expect(Self.backlogPaths(pipeline.stores.backlog).isEmpty)
    }

    @Test("the backlog is bounded: assets past its cap are refused, counted and logged once per episode")
    func backlogIsBounded() async throws {
        let capture = LogCapture()
        let gate = ReconcileGate(held: true)
        let pipeline = try fixture.pipeline {
            configure(&$0)
            $0.maxBacklogAssets = 3
            $0.reconcileGate = gate
            $0.log = capture.log
        }
        defer { pipeline.shutdown() }
        pipeline.enqueuePrerenders(fixture.imageNames)
        pipeline.enqueuePrerenders(["img0.jpg", "broken.jpg"])  // one already there (moved to the back), one refused
        #expect(pipeline.metrics.backlog.rows == 3)
        #expect(pipeline.metrics.backlog.refused == fixture.imageNames.count - 3 + 1)
        #expect(capture.count(.warning, "pre-render backlog full (3 assets)") == 1, "\(capture.text)")
        gate.release()
        #expect(await eventually(timeout: .seconds(60)) { pipeline.metrics.backlog.rows == 0 && pipeline.metrics.backlog.assetsInFlight == 0 })
        #expect(capture.count(.notice, "pre-render backlog has room again, after refusing 4 assets") == 1, "\(capture.text)")
    }

    @Test("rows left by a run whose kinds are no longer pre-rendered are settled, not kept forever")
    func rowsWithoutPrerenderedKindsAreSettled() async throws {
        let gate = ReconcileGate(held: true)
        let first = try fixture.pipeline {
            configure(&$0)
            $0.reconcileGate = gate
        }
        first.enqueuePrerenders(["img0.jpg", "img1.jpg"])
        first.shutdown()
        let second = try fixture.pipeline()
        defer { second.shutdown() }
        #expect(await eventually(timeout: .seconds(60)) { second.metrics.backlog.rows == 0 })
        #expect(second.metrics.backlog.drained == 2 && second.metrics.renders == 0)
    }

    /// Before: a pre-render whose thumbnail the cache could not write was answered from memory
    /// (`isStored` false) and its row settled as done: the asset stayed unrendered until the
    /// next start. Now it counts as a transient failure: tried again, then given up and logged.
    @Test("a pre-render the cache could not store is tried again, up to maxAttempts, then given up with a log line")
    func unstoredPrerenderIsRetried() async throws {
        let capture = LogCapture()
        let gate = ReconcileGate(held: true)
        let pipeline = try fixture.pipeline {
            configure(&$0)
            $0.reconcileGate = gate
            $0.log = capture.log
        }
        defer { pipeline.shutdown() }
        // A file where img0's shard folder goes: its cache write fails (not a missing folder
        // or a full disk, so the cache cannot repair it), every attempt. Another asset, of
        // another shard, is pre-rendered beside it.
        func shard(_ path: String) throws -> Substring {
            let version = try pipeline.assets.resolve(path).version
            return CacheKey(asset: version, kind: Self.avatar, scale: 3, encoder: pipeline.configuration.encoder(for: Self.avatar))
                .digest.prefix(2)
        }
        let blocked = try shard("img0.jpg")
        let other = try #require(try fixture.imageNames.first { try shard($0) != blocked })
        let shardPath = fixture.cache + "/" + blocked
        try? FileManager.default.removeItem(atPath: shardPath)
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: shardPath))
        pipeline.enqueuePrerenders(["img0.jpg", other])
        gate.release()
        #expect(await eventually(timeout: .seconds(60)) { pipeline.metrics.backlog.rows == 0 && pipeline.metrics.backlog.assetsInFlight == 0 },
                "\(pipeline.metrics.backlog)")
        let backlog = pipeline.metrics.backlog
        #expect(backlog.retried == PrerenderBacklog.maxAttempts - 1 && backlog.gaveUp == 1, "\(backlog)")
        #expect(backlog.drained == 1, "\(other) only: \(backlog)")
        #expect(pipeline.metrics.renders == PrerenderBacklog.maxAttempts + 1)
        #expect(!pipeline.isCached(assetPath: "img0.jpg", kind: Self.avatar, scale: 3))
        #expect(pipeline.isCached(assetPath: other, kind: Self.avatar, scale: 3))
        #expect(capture.count(.warning, "pre-rendering img0.jpg failed \(PrerenderBacklog.maxAttempts) times") == 1, "\(capture.text)")
    }

    @Test("an index of schema 2 is upgraded to 3: its thumbnails kept, the backlog table added")
    func schema2UpgradeKeepsThumbnails() throws {
        let directory = fixture.root + "/upgrade"
        let keys = ["a.jpg", "b.jpg"].map { DiskCacheFixture.key($0) }
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            for key in keys { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100)) }
            try cache.executeForTesting("DROP TABLE backlog; PRAGMA user_version = 2;")
            cache.close()
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(cache.statistics == (bytes: 200, entries: 2))
        #expect(keys.allSatisfy { cache.thumbnail(for: $0) != nil })
        #expect(cache.backlog.enqueue(["a.jpg"], maxRows: 10) == (added: 1, refused: 0))
        #expect(cache.backlog.rowCount == 1)
    }

    /// Every path in the backlog table.
    static func backlogPaths(_ backlog: any BacklogKeeping) -> [String] {
        backlog.batch(after: 0, limit: 100_000).map(\.assetPath)
    }
}
