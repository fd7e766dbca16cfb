import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline

/// What a pipeline logged, for tests that check an episode is reported once.
final class LogCapture: Sendable {
    private let lines = Mutex<[(level: PipelineLog.Level, message: String)]>([])

    var log: PipelineLog { PipelineLog { level, message in self.lines.withLock { $0.append((level, message)) } } }

    var all: [(level: PipelineLog.Level, message: String)] { lines.withLock { $0 } }

    func count(_ level: PipelineLog.Level, _ text: String) -> Int {
        all.filter { $0.level == level && (text.isEmpty || $0.message.contains(text)) }.count
    }

    var text: String { all.map { "\($0.level): \($0.message)" }.joined(separator: "\n") }
}

/// The disk cache's ownership and repairs: one process per folder, a removed folder recreated,
/// and every rebuild of the index logged with what it dropped (issue 8 items 11, 13, 14).
@Suite struct DiskCacheHealthTests {
    let fixture: DiskCacheFixture
    var directory: String { fixture.directory }
    typealias F = DiskCacheFixture

    init() throws { fixture = try DiskCacheFixture() }

    /// Before, two opens of one folder (two daemons, or a daemon and a batch) were both
    /// accepted and evicted each other's files by their diverging byte counts.
    @Test("a second open of a cache folder is refused (inUse, naming the holder) until the first closes")
    func secondOpenIsRefusedUntilTheFirstCloses() throws {
        let first = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        do throws(CacheError) {
            _ = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            Issue.record("a second open of \(directory) was accepted")
        } catch {
            #expect(error.kind == .inUse)
            #expect(error.reason.contains("in use by another thumbd (pid \(getpid()))"), "\(error)")
        }
        try first.insert(F.thumbnail(first, F.key("a.jpg"), size: 10))
        first.close()
        let second = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        #expect(second.statistics == (bytes: 10, entries: 1))
    }

    /// Before, a refused lock closed its descriptor and then closed the same number again in its
    /// deinit (a class whose init throws after every property is set is deinitialised): by then
    /// another thread may own that number. Found by strace (`close` = EBADF from `CacheLock.deinit`)
    /// behind flaky EBADF failures of other suites' file copies. Here a second thread keeps
    /// opening pipes and checks each is still open before closing it, while refusals repeat.
    @Test("a refused lock closes only its own descriptor, once")
    func refusedLockClosesOnlyItsOwnDescriptor() async {
        await #expect(processExitsWith: .success) {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cachelock-\(UUID().uuidString)").path
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            guard let holder = try? CacheLock(directory: directory) else { fatalError("no first lock") }
            let stop = Atomic<Bool>(false)
            let victims = Atomic<Int>(0)
            let bystander = Thread {
                while !stop.load(ordering: .relaxed) {
                    var ends: [Int32] = [-1, -1]
                    guard pipe(&ends) == 0 else { continue }
                    for _ in 0..<20 where fcntl(ends[0], F_GETFD) == -1 || fcntl(ends[1], F_GETFD) == -1 {
                        victims.add(1, ordering: .relaxed)
                    }
                    if close(ends[0]) != 0 || close(ends[1]) != 0 { victims.add(1, ordering: .relaxed) }
                }
            }
            bystander.start()
            for _ in 0..<5_000 {
                if (try? CacheLock(directory: directory)) != nil { fatalError("a second lock was granted") }
            }
            stop.store(true, ordering: .relaxed)
            usleep(50_000)
            withExtendedLifetime(holder) {}
            if victims.load(ordering: .relaxed) > 0 { fatalError("\(victims.load(ordering: .relaxed)) descriptors of another thread closed") }
        }
    }

    /// Before, a damaged index was rebuilt without a word while every cache file went with it.
    @Test("a damaged index is rebuilt with one warning that says how many files it dropped")
    func damagedIndexRebuildIsLogged() throws {
        let index: String
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            for name in ["a.jpg", "b.jpg", "c.jpg"] { try cache.insert(F.thumbnail(cache, F.key(name), size: 100)) }
            index = cache.directory + "/index.sqlite"
            cache.close()
        }
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: index))
        let capture = LogCapture()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: capture.log)
        #expect(cache.statistics == (bytes: 0, entries: 0))
        #expect(capture.all.count == 1, "\(capture.text)")
        #expect(capture.count(.warning, "was unusable") == 1, "\(capture.text)")
        #expect(capture.count(.warning, "dropped 3 thumbnail files (300 bytes)") == 1, "\(capture.text)")

        // Opened again, healthy: nothing to say.
        cache.close()
        let quiet = LogCapture()
        _ = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: quiet.log)
        #expect(quiet.all.isEmpty, "\(quiet.text)")
    }

    @Test("orphans after a crash are removed with a notice, not silently")
    func orphansAreReportedAtNotice() throws {
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            try cache.insert(F.thumbnail(cache, F.key("a.jpg"), size: 100))
            let orphan = F.key("orphan.jpg")
            try FileManager.default.createDirectory(atPath: cache.directory + "/" + orphan.digest.prefix(2), withIntermediateDirectories: true)
            try Data(F.bytes(orphan.digest, count: 50)).write(to: URL(fileURLWithPath: cache.filePath(for: orphan, format: .jpeg)))
            cache.close()
        }
        let capture = LogCapture()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: capture.log)
        #expect(cache.statistics == (bytes: 100, entries: 1))
        #expect(capture.count(.notice, "removed 1 files without a row (50 bytes) and 0 rows without their file") == 1, "\(capture.text)")
    }

    /// Before, with the folder gone every insert failed (ENOENT) for as long as the process ran.
    @Test("a removed cache folder is recreated at the next write, with its lock, and logged once")
    func removedFolderIsRecreated() throws {
        let capture = LogCapture()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: capture.log)
        let a = F.key("a.jpg"), b = F.key("b.jpg"), c = F.key("c.jpg")
        try cache.insert(F.thumbnail(cache, a, size: 100))
        try FileManager.default.removeItem(atPath: directory)

        try cache.insert(F.thumbnail(cache, b, size: 70))
        try cache.insert(F.thumbnail(cache, c, size: 30))
        #expect(FileManager.default.fileExists(atPath: cache.filePath(for: b, format: .jpeg)))
        #expect(cache.thumbnail(for: b)?.bytes == F.bytes(b.digest, count: 70))
        #expect(cache.thumbnail(for: a) == nil)
        #expect(cache.statistics == (bytes: 100, entries: 2))
        #expect(F.files(in: cache.directory) == cache.indexRowsForTesting())
        #expect(capture.count(.warning, "was removed: recreated it with an empty index; the 1 thumbnails (100 bytes)") == 1, "\(capture.text)")
        #expect(capture.all.count == 1, "\(capture.text)")
        // The recreated folder is locked again.
        #expect(throws: CacheError.self) { try ThumbnailStore(directory: directory, byteBudget: 1 << 20) }
    }

    @Test("a removed folder is also noticed by a look-up, so the next write finds it there")
    func removedFolderNoticedByALookup() throws {
        let capture = LogCapture()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: capture.log)
        let a = F.key("a.jpg")
        try cache.insert(F.thumbnail(cache, a, size: 100))
        try FileManager.default.removeItem(atPath: directory)
        #expect(cache.thumbnail(for: a) == nil)
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder) && isFolder.boolValue)
        #expect(FileManager.default.fileExists(atPath: directory + "/thumbd.lock"))
        #expect(capture.count(.warning, "was removed") == 1, "\(capture.text)")
    }

    /// A cache that cannot write logs the episode once, however many writes fail, and once more
    /// when writes succeed again.
    @Test("failing writes are one warning per episode and one notice at its end")
    func failingWritesAreOneEpisode() throws {
        let capture = LogCapture()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20, log: capture.log)
        let shard = { (key: CacheKey) in cache.directory + "/" + key.digest.prefix(2) }
        // A file where each key's shard folder must be: its writes fail (ENOTDIR), nothing to repair.
        let keys = (0..<5).map { F.key("k\($0).jpg") }
        for key in keys where !FileManager.default.fileExists(atPath: shard(key)) {
            try Data([0]).write(to: URL(fileURLWithPath: shard(key)))
        }
        for key in keys { #expect(throws: CacheError.self) { try cache.insert(F.thumbnail(cache, key, size: 10)) } }
        #expect(capture.count(.warning, "cache writes are failing") == 1, "\(capture.text)")
        for key in keys { try? FileManager.default.removeItem(atPath: shard(key)) }
        try cache.insert(F.thumbnail(cache, keys[0], size: 10))
        #expect(capture.count(.notice, "cache writes succeed again, after 5 failed") == 1, "\(capture.text)")
        #expect(capture.all.count == 2, "\(capture.text)")
    }
}
