import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Issue 11 item 9: opening the pipeline reconciled every cache file with the index (a listing
/// and a stat of each file, and a dictionary of every row) before anything was served: 38–41 s
/// at 1M entries. Now the index opens (quick check, totals) and hits are served from it at once;
/// the files are reconciled in the background, a shard and a batch of rows at a time.
@Suite struct StartupReconcileTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    static let avatar = PipelineFixture.avatar

    func render(_ pipeline: ThumbnailPipeline, _ names: [String]) async throws -> [String: CachedThumbnail] {
        var thumbnails: [String: CachedThumbnail] = [:]
        for name in names {
            let answer = await pipeline.thumbnail(.init(assetPath: name, kind: Self.avatar, scale: 3))
            guard let thumbnail = answer.thumbnail else { throw TestFailure("\(name): \(String(describing: answer.error))") }
            thumbnails[name] = thumbnail
        }
        return thumbnails
    }

    /// Before, `DiskCache.init` reconciled before returning: no request could be answered until
    /// every file had been listed and stat'ed. The gate holds the reconcile to show the order.
    @Test("hits are answered from the index while the background reconcile is held; a row whose file is gone falls back to a render")
    func hitsServedWhileReconcileHeld() async throws {
        let first = try fixture.pipeline()
        let rendered = try await render(first, ["img0.jpg", "img1.jpg"])
        first.shutdown()
        // Behind the cache's back: img1's file is gone.
        try FileManager.default.removeItem(atPath: try #require(rendered["img1.jpg"]).filePath)

        let gate = ReconcileGate(held: true)
        let pipeline = try fixture.pipeline { $0.reconcileGate = gate }
        defer { pipeline.shutdown() }
        #expect(pipeline.startupProgress.pending == ["cache", "assets"])
        let hit = await pipeline.thumbnail(.init(assetPath: "img0.jpg", kind: Self.avatar, scale: 3))
        #expect(hit.thumbnail?.bytes == rendered["img0.jpg"]?.bytes)
        #expect(pipeline.metrics.diskHits == 1 && pipeline.metrics.renders == 0)
        // The row without its file: dropped by the look-up, rendered again, served.
        let again = await pipeline.thumbnail(.init(assetPath: "img1.jpg", kind: Self.avatar, scale: 3))
        #expect(again.thumbnail?.bytes == rendered["img1.jpg"]?.bytes)
        #expect(pipeline.metrics.renders == 1)
        #expect(!pipeline.startupProgress.cacheReconciled)
        gate.release()
        pipeline.waitForBackgroundReconcile()
        #expect(pipeline.startupProgress.cacheReconciled)
        #expect(pipeline.startupProgress.cacheFiles.shardsDone == CacheIndex.FileReconcileProgress.shardCount)
    }

    @Test("the background reconcile removes an orphan file and a row whose file is gone, and says so once")
    func backgroundReconcileCleansUp() async throws {
        let first = try fixture.pipeline()
        let rendered = try await render(first, ["img0.jpg", "img2.png"])
        first.shutdown()
        let gone = try #require(rendered["img2.png"])
        try FileManager.default.removeItem(atPath: gone.filePath)
        // An orphan: a thumbnail file no row names (a crash between rename and insert).
        let orphanKey = DiskCacheFixture.key("orphan.jpg")
        let shard = fixture.cache + "/" + orphanKey.digest.prefix(2)
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        let orphan = shard + "/" + orphanKey.digest + ".jpg"
        try Data(repeating: 7, count: 321).write(to: URL(fileURLWithPath: orphan))

        let capture = LogCapture()
        let gate = ReconcileGate(held: true)
        let pipeline = try fixture.pipeline {
            $0.reconcileGate = gate
            $0.log = capture.log
        }
        defer { pipeline.shutdown() }
        // Not yet: the row and the orphan are both still there.
        #expect(pipeline.cacheStatistics.disk.entries == 2)
        #expect(FileManager.default.fileExists(atPath: orphan))
        gate.release()
        pipeline.waitForBackgroundReconcile()
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(pipeline.cacheStatistics.disk.entries == 1)
        #expect(DiskCacheFixture.files(in: pipeline.stores.thumbnails.directory) == pipeline.stores.thumbnails.indexRowsForTesting())
        #expect(capture.count(.notice, "removed 1 files without a row (321 bytes) and 1 rows without their file") == 1, "\(capture.text)")
        #expect(pipeline.isCached(assetPath: "img0.jpg", kind: Self.avatar, scale: 3))
    }

    /// The reconcile reads a shard's rows in batches (never all of them at once): 1,100 rows in
    /// one shard take three holds of the lock, and the cursor between batches misses none.
    @Test("a shard of 1,100 rows is reconciled in batches of at most 512, none missed")
    func reconcileReadsRowsInBatches() throws {
        let directory = fixture.root + "/batches"
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 30)
        // Rows whose digests all begin with "ab", with their files; every tenth file removed.
        try FileManager.default.createDirectory(atPath: cache.directory + "/ab", withIntermediateDirectories: true)
        var statements = ["BEGIN"]
        var expected: [String: Int] = [:]
        for index in 0..<1_100 {
            let hex = String(index, radix: 16)
            let digest = "ab" + String(repeating: "0", count: 30 - hex.count) + hex
            let relative = "ab/\(digest).jpg"
            statements.append("INSERT INTO entries VALUES ('\(digest)', 'd', 'a\(index).jpg', '\(relative)', 5, 'jpeg', 1, 1, \(index), NULL)")
            if index % 10 == 0 { continue }
            try Data(repeating: 1, count: 5).write(to: URL(fileURLWithPath: cache.directory + "/" + relative))
            expected[relative] = 5
        }
        statements.append("COMMIT")
        try cache.executeForTesting(statements.joined(separator: ";\n"))
        var reports: [CacheIndex.FileReconcileProgress] = []
        let dropped = try #require(cache.index.reconcileFiles(progress: { reports.append($0) }))
        #expect(dropped.rows == 110 && dropped.files == 0)
        #expect(reports.count == CacheIndex.FileReconcileProgress.shardCount)
        #expect(reports.last?.rowsChecked == 1_100)
        #expect(reports.last?.largestRowBatch == CacheIndex.reconcileBatchRows)
        #expect(cache.indexRowsForTesting() == expected)
        #expect(DiskCacheFixture.files(in: cache.directory) == expected)
        cache.close()
    }

    /// The asset reconcile walks the folder and the index side by side in byte order: names
    /// that sort around a folder's "/" must not be taken for deleted ones.
    @Test("the asset reconcile in byte order: exactly the deleted assets lose their thumbnails")
    func assetReconcileInByteOrder() async throws {
        let names = ["a.jpg", "a-b.jpg", "a/b.jpg", "a/c/d.jpg", "a0.jpg", "ab.jpg", "A.jpg", "é.jpg", "z/a.jpg"]
        for name in names {
            let target = fixture.assets + "/" + name
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: fixture.assets + "/img2.png", toPath: target)
        }
        let first = try fixture.pipeline()
        _ = try await render(first, names)
        first.shutdown()
        let deleted = ["a-b.jpg", "a/c/d.jpg", "é.jpg"]
        for name in deleted { try FileManager.default.removeItem(atPath: fixture.assets + "/" + name) }

        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        pipeline.waitForBackgroundReconcile()
        pipeline.follower.reconcile()
        for name in names {
            let kept = pipeline.stores.index.indexedAssetPaths(after: "", limit: 100).contains(name)
            #expect(kept == !deleted.contains(name), "\(name)")
        }
    }
}
