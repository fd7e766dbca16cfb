import Glibc
import Synchronization
import ThumbSystem

/// Unlinks the files of removed cache rows off the cache's lock and off the caller's thread.
///
/// On ext4 mounted with `discard` (this project's machines, and many SSD hosts) an unlink waits
/// for the freed blocks to be trimmed: ~1.6 ms a thumbnail. Done under the lock on the watcher's
/// thread, as before, an `rm -rf` of 10k assets took 12–35 s to handle and every request that
/// touched the cache meanwhile waited. Now the row's file is renamed out of its name under the
/// lock (a rename frees no blocks: a new thumbnail of the same digest can take the name at once)
/// and unlinked here, one at a time, in the background.
final class CacheFileReaper: Sendable {
    /// Files waiting; past this the caller unlinks at once (as before: slower, never unbounded).
    static let maxPending = 65_536

    private struct Pending {
        var paths: [String] = []
        var scheduled = false
    }

    private let pending = Mutex(Pending())
    private let worker = SerialWorker(name: "thumbd-reaper")
    private let counter = Atomic<Int>(0)

    /// The name a retired file takes beside its own: `<digest>.<ext>.gone-<pid>-<n>`, which no
    /// row names (a reconcile after a crash removes what was left).
    func trashName(for path: String) -> String {
        "\(path).gone-\(getpid())-\(counter.wrappingAdd(1, ordering: .relaxed).newValue)"
    }

    /// Takes the file at `path` out of its name now and unlinks it later. Safe under the cache's
    /// lock (it takes only its own).
    func retire(_ path: String) {
        let trash = trashName(for: path)
        do throws(SystemError) {
            try systemCall("rename \(path)") { rename(path, trash) }
        } catch {
            // Gone already; or it cannot be renamed (then unlinked as before).
            if error.errno != ENOENT { CacheFiles.remove(path) }
            return
        }
        let schedules = pending.withLock { pending -> Bool? in
            guard pending.paths.count < Self.maxPending else { return nil }
            pending.paths.append(trash)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        switch schedules {
        case nil: CacheFiles.remove(trash)
        case true?: worker.submit { [self] in drain() }
        case false?: break
        }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> [String] in
                let batch = pending.paths
                pending.paths.removeAll(keepingCapacity: false)
                if batch.isEmpty { pending.scheduled = false }
                return batch
            }
            if batch.isEmpty { return }
            for path in batch { CacheFiles.remove(path) }
        }
    }

    /// The index closed: the files retired so far are unlinked, then the thread ends (later
    /// retirements, if any, unlink on their caller's thread).
    func finishInBackground() {
        worker.close(joining: false)
    }

    /// Files retired and not unlinked yet.
    var pendingCount: Int { pending.withLock { $0.paths.count } }

    /// Waits until every file retired so far is unlinked (tests).
    func waitUntilReaped() {
        worker.waitUntilIdle()
        while pendingCount > 0 { worker.waitUntilIdle() }
    }
}
