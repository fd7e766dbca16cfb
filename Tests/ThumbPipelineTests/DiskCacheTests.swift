import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Shared by the disk cache tests: a temporary cache folder, keys and thumbnails.
final class DiskCacheFixture: Sendable {
    let directory: String

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("diskcache-\(UUID().uuidString)").path
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    static func version(_ path: String, modified: Int64 = 1_700_000_000_000_000_000) -> AssetVersion {
        AssetVersion(path: path, size: 1234, modifiedNanoseconds: modified, inode: 42, device: 7)
    }

    static func key(_ path: String, width: Double = 120, scale: Int = 1, modified: Int64 = 1_700_000_000_000_000_000) -> CacheKey {
        CacheKey(asset: version(path, modified: modified), kind: SlotKind(name: "grid", widthPoints: width, heightPoints: width),
                 scale: scale, encoder: EncoderSettings())
    }

    /// Recognisable bytes for a digest and size.
    static func bytes(_ digest: String, count: Int) -> [UInt8] {
        var seed: UInt64 = 1469598103934665603
        for byte in digest.utf8 { seed = (seed ^ UInt64(byte)) &* 1099511628211 }
        return (0..<count).map { UInt8(truncatingIfNeeded: (seed >> UInt64($0 % 56)) &+ UInt64($0) &* 31) }
    }

    static func thumbnail(_ cache: ThumbnailStore, _ key: CacheKey, size: Int, format: ImageFormat = .jpeg) -> CachedThumbnail {
        CachedThumbnail(key: key, bytes: bytes(key.digest, count: size), filePath: cache.filePath(for: key, format: format),
                        format: format, width: 120, height: 90)
    }

    /// Every file below the shard folders: relative path → size. Files retired to the reaper
    /// (`.gone-`, renamed out of their name and waiting for their unlink) are not counted: the
    /// reaper's own test shows that none stays.
    static func files(in directory: String, countsRetired: Bool = false) -> [String: Int] {
        var files: [String: Int] = [:]
        let manager = FileManager.default
        for shard in (try? manager.contentsOfDirectory(atPath: directory)) ?? [] {
            var isFolder: ObjCBool = false
            guard manager.fileExists(atPath: directory + "/" + shard, isDirectory: &isFolder), isFolder.boolValue else { continue }
            for name in (try? manager.contentsOfDirectory(atPath: directory + "/" + shard)) ?? [] {
                if !countsRetired && name.contains(".gone-") { continue }
                let attributes = try? manager.attributesOfItem(atPath: directory + "/" + shard + "/" + name)
                files[shard + "/" + name] = (attributes?[.size] as? NSNumber)?.intValue ?? -1
            }
        }
        return files
    }
}

/// The other stores on a test's cache's index, made at each use as the daemon makes them once
/// (`CacheStores`): each reads what the index holds, so they agree with one another.
extension ThumbnailStore {
    var failures: FailureStore { FailureStore(index: index) }
    var placeholders: PlaceholderStore { PlaceholderStore(index: index) }
    var focus: FocusStore { FocusStore(index: index) }
    var listing: AssetListStore { AssetListStore(index: index) }
    var backlog: BacklogStore { BacklogStore(index: index) }
}

extension ThumbnailStore {
    /// The index rows as the test sees them: relative file path → bytes.
    func indexRowsForTesting() -> [String: Int] {
        index.state.withLock { state in
            var rows: [String: Int] = [:]
            try? state.database?.query("SELECT file_path, bytes FROM entries") { rows[$0.text(0)] = $0.int(1) }
            return rows
        }
    }

    func executeForTesting(_ sql: String) throws {
        try index.state.withLock { state in
            guard let database = state.database else { throw CacheError(operation: "test", reason: "closed") }
            try database.exec(sql)
        }
    }
}

@Suite struct DiskCacheTests {
    let fixture: DiskCacheFixture
    var directory: String { fixture.directory }

    init() throws { fixture = try DiskCacheFixture() }

    typealias F = DiskCacheFixture

    @Test func insertThenLookupReturnsTheSameThumbnail() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let key = F.key("photos/a.jpg")
        let thumbnail = F.thumbnail(cache, key, size: 1000)
        #expect(thumbnail.filePath == cache.directory + "/" + key.digest.prefix(2) + "/" + key.digest + ".jpg")
        try cache.insert(thumbnail)

        let found = try #require(cache.thumbnail(for: key))
        #expect(found == thumbnail)
        #expect(try Data(contentsOf: URL(fileURLWithPath: found.filePath)) == Data(thumbnail.bytes))
        #expect(cache.statistics == (bytes: 1000, entries: 1))
        #expect(cache.thumbnail(for: F.key("photos/b.jpg")) == nil)
        #expect(cache.assetPaths() == ["photos/a.jpg"])
        #expect(F.files(in: cache.directory) == cache.indexRowsForTesting())
    }

    @Test func replacingAnEntryKeepsOneFile() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let key = F.key("photos/a.jpg")
        try cache.insert(F.thumbnail(cache, key, size: 1000))
        try cache.insert(F.thumbnail(cache, key, size: 700, format: .png))
        let found = try #require(cache.thumbnail(for: key))
        #expect(found.format == .png && found.bytes.count == 700)
        #expect(cache.statistics == (bytes: 700, entries: 1))
        #expect(F.files(in: cache.directory) == [key.digest.prefix(2) + "/" + key.digest + ".png": 700])
    }

    /// A removed row's file leaves its name under the lock and is unlinked by the reaper (an
    /// unlink waits for the trim on a `discard` mount: ~1.6 ms, which made rm -rf of 10k assets
    /// take 12–35 s under the cache's lock). The same digest stored again at once keeps its file.
    @Test func removedFilesAreRetiredAndUnlinkedInTheBackground() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let keys = (0..<50).map { F.key("photos/\($0).jpg") }
        for key in keys { try cache.insert(F.thumbnail(cache, key, size: 300)) }
        for key in keys { cache.removeThumbnails(ofAsset: key.assetPath) }
        // Stored again right away: a pending unlink must not take the new file.
        let back = keys[7]
        try cache.insert(F.thumbnail(cache, back, size: 200))
        #expect(cache.statistics == (bytes: 200, entries: 1))
        cache.index.reaper.waitUntilReaped()
        #expect(F.files(in: cache.directory, countsRetired: true) == cache.indexRowsForTesting())
        #expect(try Data(contentsOf: URL(fileURLWithPath: try #require(cache.thumbnail(for: back)).filePath)).count == 200)
        #expect(cache.index.reaper.pendingCount == 0)
    }

    @Test("a file retired and left behind by a crash is removed by the next open's reconcile")
    func retiredFileLeftByACrashIsRemovedAtOpen() throws {
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            let key = F.key("photos/a.jpg")
            try cache.insert(F.thumbnail(cache, key, size: 300))
            let path = cache.filePath(for: key, format: .jpeg)
            // As the reaper leaves it when the process dies before the unlink.
            try FileManager.default.moveItem(atPath: path, toPath: cache.index.reaper.trashName(for: path))
            try cache.executeForTesting("DELETE FROM entries")
            cache.close()
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(F.files(in: cache.directory, countsRetired: true).isEmpty)
    }

    @Test func sameDigestWithAnotherDescriptorIsAMiss() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let key = F.key("photos/a.jpg")
        let other = F.key("photos/a.jpg", width: 121)
        try cache.insert(F.thumbnail(cache, key, size: 100))
        // Simulate a digest collision: the row under this digest describes another thumbnail.
        try cache.executeForTesting("UPDATE entries SET descriptor = '\(other.descriptor)' WHERE digest = '\(key.digest)'")
        #expect(cache.thumbnail(for: key) == nil)
    }

    @Test func evictsLeastRecentlyUsedUnderTheBudget() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 300)
        let a = F.key("a.jpg"), b = F.key("b.jpg"), c = F.key("c.jpg"), d = F.key("d.jpg")
        for key in [a, b, c] { try cache.insert(F.thumbnail(cache, key, size: 100)) }
        #expect(cache.statistics == (bytes: 300, entries: 3))
        #expect(cache.thumbnail(for: a) != nil)  // A hit: now b is the oldest.
        try cache.insert(F.thumbnail(cache, d, size: 100))
        #expect(cache.statistics == (bytes: 300, entries: 3))
        #expect(!FileManager.default.fileExists(atPath: cache.filePath(for: b, format: .jpeg)))
        #expect(cache.thumbnail(for: b) == nil)
        #expect(cache.thumbnail(for: a) != nil && cache.thumbnail(for: c) != nil && cache.thumbnail(for: d) != nil)

        // Use order now: a, c, d. A 250-byte insert must evict a and c, then d.
        try cache.insert(F.thumbnail(cache, F.key("e.jpg"), size: 250))
        #expect(cache.statistics == (bytes: 250, entries: 1))
        #expect(F.files(in: cache.directory) == cache.indexRowsForTesting())
    }

    @Test func aThumbnailLargerThanTheBudgetIsNotKept() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 100)
        try cache.insert(F.thumbnail(cache, F.key("a.jpg"), size: 101))
        #expect(cache.statistics == (bytes: 0, entries: 0))
        #expect(F.files(in: cache.directory).isEmpty)
    }

    @Test func restartKeepsEntriesAndUseOrder() throws {
        let a = F.key("a.jpg"), b = F.key("b.jpg"), c = F.key("c.jpg")
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 300)
            for key in [a, b, c] { try cache.insert(F.thumbnail(cache, key, size: 100)) }
            _ = cache.thumbnail(for: a)
            cache.close()
            #expect(cache.thumbnail(for: a) == nil)
            #expect(throws: CacheError.self) { try cache.insert(F.thumbnail(cache, F.key("x.jpg"), size: 1)) }
        }
        let reopened = try ThumbnailStore(directory: directory, byteBudget: 300)
        #expect(reopened.statistics == (bytes: 300, entries: 3))
        try reopened.insert(F.thumbnail(reopened, F.key("d.jpg"), size: 100))
        #expect(reopened.thumbnail(for: b) == nil)  // The oldest use across the restart.
        let found = try #require(reopened.thumbnail(for: a))
        #expect(found.bytes == F.bytes(a.digest, count: 100))
        #expect(reopened.thumbnail(for: c) != nil)
    }

    @Test func reopeningWithASmallerBudgetEvicts() throws {
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1000)
            for name in ["a", "b", "c"] { try cache.insert(F.thumbnail(cache, F.key(name), size: 100)) }
            cache.close()
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 150)
        #expect(cache.statistics == (bytes: 100, entries: 1))
        #expect(cache.thumbnail(for: F.key("c")) != nil)
    }

    @Test func reconcileCleansUpAfterACrash() throws {
        let a = F.key("a.jpg"), b = F.key("b.jpg"), c = F.key("c.jpg"), orphan = F.key("orphan.jpg")
        let kept: String
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            for key in [a, b, c] { try cache.insert(F.thumbnail(cache, key, size: 500)) }
            cache.close()
            // A row whose file was deleted, a truncated file, a stray temporary file and an
            // orphan (renamed into place, never indexed).
            try FileManager.default.removeItem(atPath: cache.filePath(for: a, format: .jpeg))
            try Data(F.bytes(b.digest, count: 200)).write(to: URL(fileURLWithPath: cache.filePath(for: b, format: .jpeg)))
            let shard = cache.directory + "/" + c.digest.prefix(2)
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: shard + "/" + c.digest + ".tmp-99-1"))
            let orphanPath = cache.filePath(for: orphan, format: .png)
            try FileManager.default.createDirectory(atPath: (orphanPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(F.bytes(orphan.digest, count: 300)).write(to: URL(fileURLWithPath: orphanPath))
            kept = c.digest.prefix(2) + "/" + c.digest + ".jpg"
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(cache.statistics == (bytes: 500, entries: 1))
        #expect(cache.indexRowsForTesting() == [kept: 500])
        #expect(F.files(in: cache.directory) == [kept: 500])
        #expect(cache.thumbnail(for: a) == nil && cache.thumbnail(for: b) == nil && cache.thumbnail(for: orphan) == nil)
        #expect(cache.thumbnail(for: c)?.bytes == F.bytes(c.digest, count: 500))
    }

    @Test func aFileThatVanishesWhileOpenIsAMissAndForgotten() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let a = F.key("a.jpg"), b = F.key("b.jpg")
        try cache.insert(F.thumbnail(cache, a, size: 100))
        try cache.insert(F.thumbnail(cache, b, size: 100))
        try FileManager.default.removeItem(atPath: cache.filePath(for: a, format: .jpeg))
        try Data([0]).write(to: URL(fileURLWithPath: cache.filePath(for: b, format: .jpeg)))
        #expect(cache.thumbnail(for: a) == nil)
        #expect(cache.thumbnail(for: b) == nil)
        #expect(cache.statistics == (bytes: 0, entries: 0))
        #expect(F.files(in: cache.directory).isEmpty)
    }

    @Test func negativeEntryLastsUntilTheVersionChanges() throws {
        let original = F.version("broken.jpg")
        let changed = F.version("broken.jpg", modified: 1_800_000_000_000_000_000)
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            #expect(cache.failures.failure(for: original) == nil)
            cache.failures.recordFailure(original, record: .undecodable, reason: "truncated JPEG")
            let failure = try #require(cache.failures.failure(for: original))
            #expect(failure == .undecodable(reason: "truncated JPEG"))
            #expect(cache.assetPaths() == ["broken.jpg"])
            cache.close()
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(cache.failures.failure(for: original)?.reason == "truncated JPEG")  // Survives a restart.
        #expect(cache.failures.failure(for: changed) == nil)  // A changed file is tried again.
        cache.failures.recordFailure(changed, record: .tooLarge, reason: "too large")
        #expect(cache.failures.failure(for: original) == nil)
        #expect(cache.failures.failure(for: changed) == .tooLarge(reason: "too large"))
        cache.removeThumbnails(ofAsset: "broken.jpg")
        #expect(cache.failures.failure(for: changed) == nil)
        #expect(cache.assetPaths().isEmpty)
    }

    @Test func removeThumbnailsRemovesTheAssetsFiles() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        let small = F.key("x.jpg", width: 60), large = F.key("x.jpg", width: 240), other = F.key("y.jpg")
        try cache.insert(F.thumbnail(cache, small, size: 100))
        try cache.insert(F.thumbnail(cache, large, size: 400, format: .png))
        try cache.insert(F.thumbnail(cache, other, size: 50))
        #expect(cache.assetPaths() == ["x.jpg", "y.jpg"])
        cache.removeThumbnails(ofAsset: "x.jpg")
        #expect(!FileManager.default.fileExists(atPath: cache.filePath(for: small, format: .jpeg)))
        #expect(!FileManager.default.fileExists(atPath: cache.filePath(for: large, format: .png)))
        #expect(cache.thumbnail(for: small) == nil && cache.thumbnail(for: large) == nil)
        #expect(cache.thumbnail(for: other) != nil)
        #expect(cache.statistics == (bytes: 50, entries: 1))
        #expect(cache.assetPaths() == ["y.jpg"])
        #expect(F.files(in: cache.directory) == cache.indexRowsForTesting())
    }

    @Test func aCorruptIndexIsRebuiltEmpty() throws {
        let key = F.key("a.jpg")
        let index: String
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            try cache.insert(F.thumbnail(cache, key, size: 100))
            cache.failures.recordFailure(F.version("b.jpg"), record: .undecodable, reason: "bad")
            index = cache.directory + "/index.sqlite"
            cache.close()
        }
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: index))

        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(cache.statistics == (bytes: 0, entries: 0))
        #expect(cache.thumbnail(for: key) == nil)
        #expect(cache.failures.failure(for: F.version("b.jpg")) == nil)
        #expect(F.files(in: cache.directory).isEmpty)  // The unindexed files went with it.
        #expect(FileManager.default.fileExists(atPath: index + ".broken"))
        try cache.insert(F.thumbnail(cache, key, size: 100))
        #expect(cache.thumbnail(for: key) != nil)
    }

    @Test(arguments: ["PRAGMA user_version = 99", "CREATE TABLE strangers (x); PRAGMA user_version = 0", "DROP TABLE failures"])
    func anUnknownIndexIsMovedAside(_ sql: String) throws {
        let key = F.key("a.jpg")
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            try cache.insert(F.thumbnail(cache, key, size: 100))
            if sql.hasPrefix("CREATE") { try cache.executeForTesting("DROP TABLE entries; DROP TABLE failures") }
            try cache.executeForTesting(sql)
            cache.close()
        }
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(cache.statistics == (bytes: 0, entries: 0))
        try cache.insert(F.thumbnail(cache, key, size: 100))
        #expect(cache.thumbnail(for: key) != nil)
    }

    @Test func refusesAFilePathThatIsNotTheCaches() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        var thumbnail = F.thumbnail(cache, F.key("a.jpg"), size: 10)
        thumbnail.filePath = "/tmp/elsewhere.jpg"
        #expect(throws: CacheError.self) { try cache.insert(thumbnail) }
        #expect(F.files(in: cache.directory).isEmpty)
    }

    @Test func anUnwritableDirectoryIsACacheError() throws {
        try "not a folder".write(toFile: directory, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: CacheError.self) { try ThumbnailStore(directory: directory + "/cache", byteBudget: 100) }
    }

    @Test func concurrentUseKeepsIndexAndFilesInAgreement() throws {
        let cache = try ThumbnailStore(directory: directory, byteBudget: 20_000)
        let keys = (0..<64).map { F.key("p\($0).jpg") }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for round in 0..<100 {
                let key = keys[(worker * 7 + round * 13) % keys.count]
                switch round % 4 {
                case 0, 1: try? cache.insert(F.thumbnail(cache, key, size: 200 + (round * worker) % 900, format: round % 8 == 0 ? .png : .jpeg))
                case 2: if let hit = cache.thumbnail(for: key) { #expect(hit.bytes == F.bytes(key.digest, count: hit.bytes.count)) }
                default: if round % 20 == 3 { cache.removeThumbnails(ofAsset: key.assetPath) }
                }
            }
        }
        let rows = cache.indexRowsForTesting()
        #expect(F.files(in: cache.directory) == rows)
        #expect(cache.statistics == (bytes: rows.values.reduce(0, +), entries: rows.count))
        #expect(cache.statistics.bytes <= 20_000)
    }
}
