import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline
import ThumbSystem

/// Placeholders in the index (schema 4's `placeholders` table) and through the pipeline: stored
/// per asset version, looked up in batches, removed with the asset, kept across restarts, and
/// computed by the first render of each version.
@Suite struct PlaceholderIndexTests {
    static func placeholder(_ seed: UInt8, alpha: UInt8 = 255) -> Placeholder {
        Placeholder(thumbHash: (0..<UInt8(6 + seed % 10)).map { $0 &+ seed }, averageRed: seed, averageGreen: 2, averageBlue: 250,
                    averageAlpha: alpha)
    }

    @Test("stored per version: the same version reads back, another version or path reads none; kept across a reopen")
    func storeAndLookUp() throws {
        let fixture = try DiskCacheFixture()
        let version = DiskCacheFixture.version("a/b.jpg")
        let edited = DiskCacheFixture.version("a/b.jpg", modified: 1_800_000_000_000_000_000)
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            defer { cache.close() }
            #expect(cache.placeholders.placeholder(of: version) == nil)
            cache.placeholders.store(Self.placeholder(7, alpha: 128), of: version)
            #expect(cache.placeholders.placeholder(of: version) == Self.placeholder(7, alpha: 128))
            #expect(cache.placeholders.placeholder(of: edited) == nil, "another version of the file has none")
            #expect(cache.placeholders.placeholder(of: DiskCacheFixture.version("a/c.jpg")) == nil)
        }
        let reopened = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { reopened.close() }
        #expect(reopened.placeholders.placeholder(of: version) == Self.placeholder(7, alpha: 128), "kept across a restart")
        // A decode of the edited file replaces the row.
        reopened.placeholders.store(Self.placeholder(9), of: edited)
        #expect(reopened.placeholders.placeholder(of: edited) == Self.placeholder(9) && reopened.placeholders.placeholder(of: version) == nil)
        #expect(reopened.placeholders.count == 1)
    }

    @Test("a batch look-up of 50 paths answers each stored one with its version, and nothing for the rest")
    func batchLookUp() throws {
        let fixture = try DiskCacheFixture()
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        let paths = (0..<50).map { "cells/\($0).jpg" }
        for (index, path) in paths.enumerated() where index % 5 != 0 {
            cache.placeholders.store(Self.placeholder(UInt8(index)), of: DiskCacheFixture.version(path))
        }
        let found = cache.placeholders.stored(ofAssets: paths + ["cells/0.jpg", "elsewhere.png"])
        #expect(found.count == 40)
        for (index, path) in paths.enumerated() {
            if index % 5 == 0 {
                #expect(found[ExactPath(path)] == nil)
            } else {
                #expect(found[ExactPath(path)] == StoredPlaceholder(version: DiskCacheFixture.version(path).description,
                                                          placeholder: Self.placeholder(UInt8(index))))
            }
        }
    }

    @Test("a hash outside the format is never stored")
    func refusesOutOfFormatHashes() throws {
        let fixture = try DiskCacheFixture()
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        var long = Self.placeholder(1)
        long.thumbHash = [UInt8](repeating: 1, count: ThumbHash.maxBytes + 1)
        cache.placeholders.store(long, of: DiskCacheFixture.version("x.jpg"))
        var short = Self.placeholder(1)
        short.thumbHash = [1, 2]
        cache.placeholders.store(short, of: DiskCacheFixture.version("y.jpg"))
        #expect(cache.placeholders.count == 0)
    }

    @Test("removed with the asset (the watcher's removal batch) and with its folder; the asset reconcile sees placeholder-only rows")
    func removedWithTheAsset() throws {
        let fixture = try DiskCacheFixture()
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        for path in ["gone.jpg", "kept.jpg", "album/one.jpg", "album/two.jpg", "album0/other.jpg"] {
            cache.placeholders.store(Self.placeholder(3), of: DiskCacheFixture.version(path))
        }
        #expect(cache.assetPaths() == ["gone.jpg", "kept.jpg", "album/one.jpg", "album/two.jpg", "album0/other.jpg"])
        #expect(cache.assetPaths(under: "album") == ["album/one.jpg", "album/two.jpg"])
        cache.removeThumbnails(ofAssets: ["gone.jpg"])
        #expect(cache.placeholders.placeholder(of: DiskCacheFixture.version("gone.jpg")) == nil)
        #expect(cache.placeholders.placeholder(of: DiskCacheFixture.version("kept.jpg")) != nil)
        cache.removeThumbnails(under: "album")
        #expect(cache.placeholders.stored(ofAssets: ["album/one.jpg", "album/two.jpg", "album0/other.jpg"]).keys.map(\.text) == ["album0/other.jpg"])
        #expect(cache.placeholders.count == 2)
    }
}

/// The pipeline's side: the first decode of a version computes and stores its placeholder (in
/// process here; the daemon tests cover the sandboxed worker) unless a client waits on a decode
/// that could skip columns, later renders do not, and the batch look-up queues what it does not know.
@Suite struct PipelinePlaceholderTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    func until(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    @Test("a request's render stores the placeholder of the version it read; a render of another kind computes none again")
    func renderStoresPlaceholder() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let first = await pipeline.thumbnail(.init(assetPath: "img3.png", kind: PipelineFixture.avatar, scale: 3))
        #expect(first.thumbnail != nil)
        let version = try pipeline.assets.resolve("img3.png").version
        let stored = try #require(pipeline.stores.placeholders.placeholder(of: version))
        #expect(stored.thumbHash[2] & 0x80 != 0, "basn6a08 has alpha")
        #expect(pipeline.metrics.placeholdersComputed == 1)
        _ = await pipeline.thumbnail(.init(assetPath: "img3.png", kind: PipelineFixture.large, scale: 1))
        #expect(pipeline.metrics.placeholdersComputed == 1, "the version already has one")
        let cached = try #require(first.thumbnail)
        #expect(pipeline.placeholders.placeholder(of: cached) == stored)
        #expect(pipeline.placeholders.known(assetPath: "img3.png") == stored)
    }

    @Test("the batch look-up: pending (queued) for unseen assets, then known; missing and failed per asset, never for all")
    func batchLookUpQueuesTheUnknown() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let paths = fixture.imageNames + ["no-such.jpg", "../outside.jpg", "broken.jpg"]
        let first = pipeline.placeholders.states(ofAssets: paths, rendering: PipelineFixture.avatar, scale: 3)
        #expect(first.count == paths.count)
        for (path, state) in zip(paths, first) where fixture.imageNames.contains(path) {
            #expect(state == .pending, "\(path): \(state)")
        }
        guard case .missing = first[paths.firstIndex(of: "no-such.jpg")!] else { Issue.record("no-such.jpg: \(first)"); return }
        guard case .missing = first[paths.firstIndex(of: "../outside.jpg")!] else { Issue.record("../outside.jpg: \(first)"); return }
        #expect(await until {
            pipeline.placeholders.states(ofAssets: fixture.imageNames, rendering: PipelineFixture.avatar, scale: 3).allSatisfy {
                if case .known = $0 { return true } else { return false }
            }
        }, "every image's placeholder computed by the queued renders")
        #expect(await until {
            if case .failed = pipeline.placeholders.states(ofAssets: ["broken.jpg"], rendering: PipelineFixture.avatar, scale: 3)[0] { return true }
            return false
        }, "the undecodable file is answered failed once its render failed")
        #expect(pipeline.metrics.placeholdersComputed == fixture.imageNames.count)
        // Cached thumbnails but no placeholder (an index from before schema 4): the look-up still gets one computed.
        let versions = try fixture.imageNames.map { try pipeline.assets.resolve($0).version }
        PlaceholderStore(index: pipeline.stores.index).removeForTesting(of: versions[0].path)
        #expect(pipeline.placeholders.states(ofAssets: [versions[0].path], rendering: PipelineFixture.avatar, scale: 3) == [.pending])
        #expect(await until { pipeline.stores.placeholders.placeholder(of: versions[0]) != nil })
    }

    @Test("a client's render that can skip columns leaves the placeholder to a decode no client waits on")
    func clientsCroppedRenderLeavesIt() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let version = try pipeline.assets.resolve("img0.jpg").version // 1800x1200: a square fill skips a third
        let visible = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: PipelineFixture.avatar, scale: 3))
        #expect(visible.thumbnail != nil)
        #expect(pipeline.stores.placeholders.placeholder(of: version) == nil && pipeline.metrics.placeholdersComputed == 0)
        // The same crop at another size wanted ahead of the screen (prefetch): no client waits on it.
        let tile = SlotKind(name: "tile", widthPoints: 40, heightPoints: 40, scales: [2], mode: .fill)
        let prefetched = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: tile, scale: 2, priority: .prefetch))
        #expect(prefetched.thumbnail != nil)
        #expect(pipeline.stores.placeholders.placeholder(of: version) != nil && pipeline.metrics.placeholdersComputed == 1)
    }

    @Test("a client that reads placeholders (wait=0, JSON) has its render compute one, column crop or not")
    func clientWhoWantsItGetsIt() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        var request = PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.avatar, scale: 3)
        request.wantsPlaceholder = true
        #expect(await pipeline.thumbnail(request).thumbnail != nil)
        #expect(pipeline.stores.placeholders.placeholder(of: try pipeline.assets.resolve("img0.jpg").version) != nil)
    }

    @Test("a look-up that finds a client's render of its thumbnail queued has that render compute the placeholder")
    func lookUpJoinsAQueuedClientRender() async throws {
        let pipeline = try fixture.pipeline(paused: true)
        defer { pipeline.shutdown() }
        let log = AnswerLog()
        pipeline.submit(PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.avatar, scale: 3), completion: log.completion("client"))
        #expect(pipeline.placeholders.states(ofAssets: ["img0.jpg"], rendering: PipelineFixture.avatar, scale: 3) == [.pending])
        #expect(pipeline.metrics.queuedJobs.values.reduce(0, +) == 1, "the look-up joined the client's job")
        try pipeline.startWorkers()
        await log.wait(for: 1)
        #expect((try? log.response("client")?.result.get()) != nil)
        #expect(pipeline.stores.placeholders.placeholder(of: try pipeline.assets.resolve("img0.jpg").version) != nil)
        #expect(pipeline.metrics.placeholdersComputed == 1)
    }

    @Test("a changed file has no placeholder until it is decoded again; the version tag changes with it")
    func changedFileIsPendingAgain() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        #expect(await until {
            if case .known = pipeline.placeholders.states(ofAssets: ["img0.jpg"], rendering: PipelineFixture.avatar, scale: 3)[0] { return true }
            return false
        })
        guard case .known(let before, let tag)? = pipeline.placeholders.states(ofAssets: ["img0.jpg"], rendering: PipelineFixture.avatar,
                                                                         scale: 3).first else {
            Issue.record("no placeholder after the look-up's render"); return
        }
        try FileManager.default.removeItem(atPath: fixture.assets + "/img0.jpg")
        try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/exif-samples/Canon_40D.jpg", toPath: fixture.assets + "/img0.jpg")
        #expect(pipeline.placeholders.states(ofAssets: ["img0.jpg"], rendering: PipelineFixture.avatar, scale: 3) == [.pending])
        #expect(await until {
            if case .known(let after, let newTag) = pipeline.placeholders.states(ofAssets: ["img0.jpg"], rendering: PipelineFixture.avatar, scale: 3)[0] {
                return after != before && newTag != tag
            }
            return false
        })
    }
}
