import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` at random moments while a child process inserts, replaces, evicts and removes
/// thumbnails; after each kill, opening the cache must leave the index and the files in
/// agreement, every indexed file whole.
///
/// The child is `thumbd-crash-child disk-cache DIR` (Tests/CrashChild): it creates DIR.ready
/// once its first thumbnail is indexed, then writes with `DiskCacheWriter`'s keys and bytes
/// (the same as `DiskCacheFixture.key` and `DiskCacheFixture.bytes`).
@Suite struct DiskCacheCrashTests {
    typealias F = DiskCacheFixture
    static let byteBudget = 48_000

    @Test(.timeLimit(.minutes(1))) func killedWriterLeavesAConsistentCache() throws {
        let fixture = try DiskCacheFixture()
        let directory = fixture.directory
        for round in 0..<8 {
            let ready = directory + ".ready"
            try? FileManager.default.removeItem(atPath: ready)
            let child = try CrashChildProcess(mode: "disk-cache", target: directory)
            try child.waitUntilReady(ready)
            usleep(UInt32.random(in: 5_000...250_000))
            let (ending, wasRunning) = child.kill()
            #expect(wasRunning, "round \(round): the writer \(ending) before it was killed: \(child.log)")
            #expect(ending == .signalled(SIGKILL), "round \(round): the writer \(ending), not killed by SIGKILL: \(child.log)")
            try? FileManager.default.removeItem(atPath: ready)

            let cache = try ThumbnailStore(directory: directory, byteBudget: Self.byteBudget)
            let rows = cache.indexRowsForTesting()
            let files = F.files(in: cache.directory)
            #expect(!rows.isEmpty, "round \(round): the writer indexed a thumbnail before it was killed; the reopened index has none")
            #expect(files == rows, "round \(round): index and files disagree")
            #expect(cache.statistics == (bytes: rows.values.reduce(0, +), entries: rows.count))
            for (relative, size) in rows {
                let digest = String(relative.split(separator: "/")[1].prefix(32))
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cache.directory + "/" + relative)))
                #expect(bytes == F.bytes(digest, count: size), "round \(round): \(relative) is not the thumbnail written")
            }
            cache.close()
        }
    }
}
