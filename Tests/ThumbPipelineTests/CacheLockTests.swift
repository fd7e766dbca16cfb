import Foundation
import Testing
@testable import ThumbPipeline

/// A closed cache gives its lock back at once, even while another reference to the lock's open
/// file lives on, as it does in a child that another thread is spawning (until its exec closes
/// the close-on-exec descriptors). BacklogTests' reopen failed so under a full parallel run.
@Suite struct CacheLockTests {
    let fixture = try! DiskCacheFixture()

    /// This process's descriptors open on `path`.
    static func descriptors(of path: String) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == path
        }
    }

    @Test("a cache reopened right after close gets the lock, though a copy of the old descriptor is still open")
    func reopenWhileACopyLives() throws {
        let first = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        let lockPath = URL(fileURLWithPath: fixture.directory + "/" + CacheLock.fileName).standardized.path
        let held = try #require(Self.descriptors(of: lockPath).first, "the open cache holds \(lockPath)")
        // What a child between fork and exec holds: another reference to the same open file.
        let copy = dup(held)
        try #require(copy >= 0)
        defer { close(copy) }
        first.close()
        let second = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        second.close()
    }
}
