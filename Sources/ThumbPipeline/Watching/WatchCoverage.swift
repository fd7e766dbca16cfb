#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ThumbSystem

/// How far the folder watcher reaches, for `/metrics`: read from any thread.
package final class WatchCoverage: Sendable {
    /// Folders with a live watch now.
    let watchedFolders = Atomic<Int>(0)
    /// Folders the watch limit left without a watch, as last seen (covered by periodic rescans).
    let unwatchedFolders = Atomic<Int>(0)
    /// Watches the kernel refused for its limit, the periodic retries included.
    let watchFailures = Atomic<Int>(0)
    /// Rescans of unwatched folders (or of the whole root, past the caps of `MissedFolders`).
    let missedFolderRescans = Atomic<Int>(0)
    /// Times the kernel's event queue overflowed (events dropped; the root was rescanned).
    let queueOverflows = Atomic<Int>(0)

    package init() {}

    package struct Snapshot: Sendable, Equatable {
        package var watchedFolders: Int
        package var unwatchedFolders: Int
        package var watchFailures: Int
        package var missedFolderRescans: Int
        package var queueOverflows: Int
    }

    package var snapshot: Snapshot {
        Snapshot(watchedFolders: watchedFolders.load(ordering: .relaxed), unwatchedFolders: unwatchedFolders.load(ordering: .relaxed),
                 watchFailures: watchFailures.load(ordering: .relaxed), missedFolderRescans: missedFolderRescans.load(ordering: .relaxed),
                 queueOverflows: queueOverflows.load(ordering: .relaxed))
    }
}

/// How the watcher adds one folder watch: `inotify_add_watch` (the default), or a stand-in with
/// which tests make the kernel's watch limit refuse chosen folders (ENOSPC) — the real limit is
/// a sysctl of the whole machine.
struct WatchAdder: Sendable {
    /// (inotify descriptor, path for the kernel, the folder relative to the root, mask) → wd.
    let add: @Sendable (_ inotifyFD: Int32, _ path: String, _ relative: String, _ mask: UInt32) throws(SystemError) -> Int32

    static let inotify = WatchAdder { fd, path, _, mask throws(SystemError) in
        try systemCall("inotify_add_watch \(path)") { inotify_add_watch(fd, path, mask) }
    }
}
