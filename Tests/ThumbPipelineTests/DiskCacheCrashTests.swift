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
/// The child is this test binary again, running `crashWriterChild` with
/// `THUMBD_DISKCACHE_CRASH_DIR` set (without it, that test does nothing).
@Suite struct DiskCacheCrashTests {
    static let environmentKey = "THUMBD_DISKCACHE_CRASH_DIR"
    typealias F = DiskCacheFixture

    @Test func crashWriterChild() throws {
        guard let directory = ProcessInfo.processInfo.environment[Self.environmentKey] else { return }
        let cache = try DiskCache(directory: directory, byteBudget: 48_000)
        _ = FileManager.default.createFile(atPath: directory + ".ready", contents: nil)
        var random = SystemRandomNumberGenerator()
        let deadline = Date().addingTimeInterval(30)  // Never outlive a parent that died.
        while Date() < deadline {
            let n = Int.random(in: 0..<120, using: &random)
            let key = F.key("crash/\(n).jpg", width: Double(100 + n % 3))
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let format: ImageFormat = Bool.random(using: &random) ? .jpeg : .png
                try? cache.insert(F.thumbnail(cache, key, size: Int.random(in: 1...6000, using: &random), format: format))
            case 6, 7:
                _ = cache.thumbnail(for: key)
            case 8:
                cache.recordFailure(F.version(key.assetPath), kind: "decode", reason: "test")
            default:
                cache.removeThumbnails(ofAsset: key.assetPath)
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func killedWriterLeavesAConsistentCache() throws {
        let fixture = try DiskCacheFixture()
        let directory = fixture.directory
        let executable = try #require(Self.testExecutable())
        var indexedTotal = 0
        for round in 0..<8 {
            let ready = directory + ".ready"
            try? FileManager.default.removeItem(atPath: ready)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["--testing-library", "swift-testing", "--filter", "crashWriterChild"]
            var environment = ProcessInfo.processInfo.environment
            environment[Self.environmentKey] = directory
            child.environment = environment
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()

            let start = Date()
            while !FileManager.default.fileExists(atPath: ready) && child.isRunning && Date().timeIntervalSince(start) < 20 {
                usleep(2_000)
            }
            #expect(child.isRunning, "round \(round): the writer ended before it was killed")
            usleep(UInt32.random(in: 5_000...250_000))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            #expect(child.terminationReason == .uncaughtSignal)
            try? FileManager.default.removeItem(atPath: ready)

            let cache = try DiskCache(directory: directory, byteBudget: 48_000)
            let rows = cache.indexRowsForTesting()
            let files = F.files(in: cache.directory)
            #expect(files == rows, "round \(round): index and files disagree")
            #expect(cache.statistics == (bytes: rows.values.reduce(0, +), entries: rows.count))
            for (relative, size) in rows {
                let digest = String(relative.split(separator: "/")[1].prefix(32))
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cache.directory + "/" + relative)))
                #expect(bytes == F.bytes(digest, count: size), "round \(round): \(relative) is not the thumbnail written")
            }
            indexedTotal += rows.count
            cache.close()
        }
        #expect(indexedTotal > 0, "the writer never got a thumbnail indexed: the test proved nothing")
    }

    /// The running test binary (`…/thumbdPackageTests.xctest`).
    static func testExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
