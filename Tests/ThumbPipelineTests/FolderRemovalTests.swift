import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline

extension ThumbnailStore {
    /// Index rows without files (the removal paths do not need them), `count` per path, in one
    /// transaction: a big index in milliseconds. The totals count them.
    func insertRowsForTesting(_ paths: [String], perPath count: Int = 1) {
        index.state.withLock { state in
            guard let database = state.database else { return }
            try? database.transaction { () throws(SQLiteError) in
                for path in paths {
                    for copy in 0..<count {
                        state.useCounter += 1
                        let digest = String(format: "%032llx", state.useCounter)
                        try database.execute("""
                            INSERT INTO entries (digest, descriptor, asset_path, file_path, bytes, format, width, height, last_use)
                            VALUES (?, ?, ?, ?, 10, 'jpeg', 1, 1, ?)
                            """, [.text(digest), .text("test \(copy)"), .text(path), .text("00/\(digest).jpg"), .integer(state.useCounter)])
                        state.totalBytes += 10
                        state.entryCount += 1
                    }
                }
            }
        }
    }

    /// SQLite's step counters of this cache's connection so far.
    var stepsForTesting: (virtualMachine: Int, fullScan: Int) {
        index.state.withLock { ($0.database?.virtualMachineSteps ?? 0, $0.database?.fullScanSteps ?? 0) }
    }

    /// EXPLAIN QUERY PLAN's detail lines for `sql` with `bounds`.
    func queryPlanForTesting(_ sql: String, _ bounds: [SQLiteValue]) -> [String] {
        index.state.withLock { state in
            var lines: [String] = []
            try? state.database?.query("EXPLAIN QUERY PLAN " + sql, bounds) { lines.append($0.text(3)) }
            return lines
        }
    }
}

/// Issue 11 item 3: a folder event touches the folder's rows only (a range of the
/// `entries_by_asset` index and of the failures' key), never the whole index.
@Suite struct FolderRemovalTests {
    let fixture: DiskCacheFixture
    init() throws { fixture = try DiskCacheFixture() }

    /// Names that sort around '/' byte-wise (' ' '-' '.' before it, '0' right after it), the
    /// folder's name as a prefix of a sibling, non-ASCII, and a combining mark right after the
    /// slash (one Swift Character with it, so `String.hasPrefix("a/")` is false; byte-wise it is
    /// under "a", as the file system sees it).
    static let paths = [
        "a/x.jpg", "a/b/y.jpg", "a/b/c/d/z.png", "a/é.jpg", "a/日本/写真.heic", "a/\u{301}.jpg", "a/a0/q.jpg",
        "a", "a.jpg", "a b/x.jpg", "a-b/x.jpg", "a.b/x.jpg", "a0", "a0/x.jpg", "ab/x.jpg", "A/x.jpg", "b/a/x.jpg",
        "é/x.jpg", "éa/x.jpg", "e/x.jpg", "\u{7F}/x.jpg", "~/x.jpg", "a\u{301}/x.jpg",
    ]

    /// Byte-wise: what "under the folder" means on disk.
    static func reference(_ paths: some Sequence<String>, under folder: String) -> Set<String> {
        Set(paths.filter { $0.utf8.starts(with: (folder + "/").utf8) })
    }

    @Test(arguments: ["a", "a/", "a/b", "a b", "a0", "é", "a\u{301}", "a/日本", "A", "~"])
    func queryReturnsExactlyThePathsUnderTheFolder(folder: String) throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        cache.insertRowsForTesting(Self.paths, perPath: 2)
        // Failures alone (no thumbnail) count too.
        for path in ["a/failed.jpg", "a0/failed.jpg", "a b/failed.jpg", "é/failed.jpg"] {
            cache.failures.recordFailure(DiskCacheFixture.version(path), record: .undecodable, reason: "test")
        }
        let all = Self.paths + ["a/failed.jpg", "a0/failed.jpg", "a b/failed.jpg", "é/failed.jpg"]
        let trimmed = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        let expected = Self.reference(all, under: trimmed)
        #expect(!expected.isEmpty)
        #expect(cache.assetPaths(under: folder) == expected)
        #expect(cache.assetPaths(under: "") == Set(all))

        let before = cache.statistics
        let removed = cache.removeThumbnails(under: folder)
        #expect(removed == expected)
        let rowsRemoved = expected.filter { !$0.hasSuffix("failed.jpg") }.count * 2
        #expect(cache.statistics.entries == before.entries - rowsRemoved)
        #expect(cache.statistics.bytes == before.bytes - rowsRemoved * 10)
        #expect(cache.assetPaths(under: folder).isEmpty)
        #expect(cache.assetPaths() == Set(all).subtracting(expected), "only the folder's rows went")
        #expect(cache.indexRowsForTesting().count == cache.statistics.entries)
    }

    @Test func theSpecialCasesByName() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        cache.insertRowsForTesting(Self.paths)
        #expect(cache.assetPaths(under: "a") == ["a/x.jpg", "a/b/y.jpg", "a/b/c/d/z.png", "a/é.jpg", "a/日本/写真.heic", "a/\u{301}.jpg", "a/a0/q.jpg"])
        #expect(cache.assetPaths(under: "a b") == ["a b/x.jpg"])
        #expect(cache.assetPaths(under: "a0") == ["a0/x.jpg"])
        #expect(cache.assetPaths(under: "é") == ["é/x.jpg"])
        #expect(cache.assetPaths(under: "a/b") == ["a/b/y.jpg", "a/b/c/d/z.png"])
        #expect(cache.assetPaths(under: "nothing").isEmpty)
        #expect(cache.assetPaths(under: "a/x.jpg").isEmpty, "a file is no folder")
    }

    /// The query runs on the index: SQLite's plan says so, and it counts no full-scan step and
    /// a number of virtual-machine steps set by the folder's rows, not by the index's.
    @Test func removalVisitsOnlyTheFolderRows() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        cache.insertRowsForTesting((0..<20_000).map { "elsewhere/\($0 % 97)/\($0).jpg" })
        cache.insertRowsForTesting((0..<10).map { "gone/\($0).jpg" }, perPath: 3)
        cache.failures.recordFailure(DiskCacheFixture.version("gone/broken.jpg"), record: .undecodable, reason: "test")
        let (condition, bounds) = CacheIndex.rangeCondition(under: "gone")
        let entriesPlan = cache.queryPlanForTesting("SELECT asset_path, file_path, bytes FROM entries WHERE \(condition)", bounds)
        let failuresPlan = cache.queryPlanForTesting("SELECT asset_path FROM failures WHERE \(condition)", bounds)
        #expect(entriesPlan.contains { $0.contains("SEARCH entries USING INDEX entries_by_asset (asset_path>? AND asset_path<?)") }, "\(entriesPlan)")
        #expect(failuresPlan.contains { $0.contains("SEARCH failures USING") && $0.contains("(asset_path>? AND asset_path<?)") }, "\(failuresPlan)")

        let before = cache.stepsForTesting
        #expect(cache.removeThumbnails(under: "gone").count == 11)
        let after = cache.stepsForTesting
        #expect(after.fullScan == before.fullScan)
        // 31 rows: a few dozen steps each at most; a scan of the 20,000 others would be far more.
        #expect(after.virtualMachine - before.virtualMachine < 2_000, "\(after.virtualMachine - before.virtualMachine) steps")
        #expect(cache.statistics.entries == 20_000)
    }
}

/// The pipeline's `.removedFolder`: before, it read every asset path of the index (and then
/// filtered), so an `rm -rf` of 101 folders read a million rows 101 times.
@Suite struct PipelineFolderRemovalTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    @Test func removedFolderTouchesOnlyItsRows() throws {
        let pipeline = try fixture.pipeline(paused: true)
        defer { pipeline.shutdown() }
        // The start-up file reconcile drops rows whose files are missing (these have none).
        pipeline.waitForBackgroundReconcile()
        pipeline.stores.thumbnails.insertRowsForTesting((0..<20_000).map { "kept/\($0 % 101)/\($0).jpg" })
        pipeline.stores.thumbnails.insertRowsForTesting((0..<50).map { "album/\($0 % 5)/\($0).jpg" } + ["album0/x.jpg", "album b/y.jpg"])
        pipeline.stores.failures.recordFailure(DiskCacheFixture.version("album/3/broken.jpg"), record: .undecodable, reason: "test")
        let before = pipeline.stores.thumbnails.stepsForTesting
        pipeline.follower.handle(.removedFolder(path: "album"))
        let after = pipeline.stores.thumbnails.stepsForTesting
        #expect(pipeline.stores.thumbnails.assetPaths(under: "album").isEmpty)
        #expect(pipeline.stores.thumbnails.assetPaths(under: "kept").count == 20_000)
        #expect(pipeline.stores.thumbnails.assetPaths(under: "album0") == ["album0/x.jpg"])
        #expect(pipeline.stores.thumbnails.assetPaths(under: "album b") == ["album b/y.jpg"])
        #expect(after.fullScan == before.fullScan, "a full scan of the index")
        #expect(after.virtualMachine - before.virtualMachine < 5_000, "\(after.virtualMachine - before.virtualMachine) steps for 51 rows")
    }
}
