#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// Folders the kernel's watch limit (`fs.inotify.max_user_watches`) left unwatched: logged
/// (rate-limited, with the count and the sysctl to raise), counted in `coverage`, tried again
/// at the watcher's poll timer and rescanned then — what changed in them meanwhile is reported
/// `.changed`/`.removed`, so nothing is missed for longer than a retry interval. The interval is
/// `rootPollSeconds`, or ten times what the last retry took when that is longer, so rescans of
/// a big unwatched region never take more than a tenth of the watcher's time.
extension FolderWatcher {
    /// Notes the folders of `failures` the watch limit refused: takes a snapshot of each
    /// (reporting its images `.changed` when `reportFiles`: a new folder's images are new),
    /// logs, and schedules a retry.
    /// `logged`: false for the same folders refused again at a retry (logged once already).
    func noteMissed(_ failures: [WatchFailure], reportFiles: Bool, logged: Bool = true) {
        let refused = failures.filter { Self.isWatchLimit($0.error) }
        guard !refused.isEmpty else { return }
        for failure in refused where !isStopping { remember(failure.path, reportFiles: reportFiles) }
        if logged {
            missed.unlogged += refused.count
            missed.unloggedExamples = Array((missed.unloggedExamples + refused.prefix(64).map(\.path)).sorted().prefix(3))
        }
        logMissedIfDue(outOfMemory: refused.contains { $0.error.errno == ENOMEM })
        if missed.nextRetry == nil { missed.nextRetry = .now + .seconds(rootPollSeconds) }
        publishMissed()
    }

    /// Snapshots the subtree at `folder` (within the caps; past them, whole-root rescans).
    private func remember(_ folder: String, reportFiles: Bool) {
        if folder.isEmpty { missed.rootMissed = true }
        guard !missed.overflowed else {
            missed.overflowFolders += 1
            return
        }
        guard !missed.isFull else { return overflowMissed() }
        let scan = AssetScanner.scan(root, under: folder, limit: missed.filesLeft, walk: FolderWalk(root: root))
        if reportFiles {
            for version in scan.versions where !isStopping { handler(.changed(path: version.path)) }
        }
        if scan.truncated { return overflowMissed() }
        missed.add(folder, Self.subtree(of: scan, under: folder))
    }

    private static func subtree(of scan: AssetScan, under folder: String) -> MissedFolders.Subtree {
        var files: [String: FileStatus] = [:]
        for version in scan.versions where folder.isEmpty || version.path.isPath(under: folder) {
            files[version.path] = version.fileStatus
        }
        return MissedFolders.Subtree(files: files, folders: max(1, scan.folders))
    }

    private func overflowMissed() {
        guard !missed.overflowed else { return }
        missed.overflow()
        guard !missed.overflowLogged else { return }
        missed.overflowLogged = true
        log.warning("folder watcher of \(root.path): more than \(missed.maxFolders) folders or \(missed.maxFiles) images "
                    + "are without a watch: the whole root is rescanned on the retry timer instead of those folders")
    }

    /// At the poll timer: when a retry is due, tries the missed folders again and reports what
    /// changed in them since they were last looked at.
    func retryMissedIfDue() {
        guard let due = missed.nextRetry, ContinuousClock.now >= due else { return }
        let started = ContinuousClock.now
        coverage.missedFolderRescans.add(1, ordering: .relaxed)
        if missed.overflowed {
            missed.removeAll(under: "")
            // Re-adding a watched folder gives its wd again: only the missing ones are new.
            noteMissed(addTree("", reportFiles: false), reportFiles: false, logged: false)
            if !isStopping { handler(.rescan) }
        } else {
            let subtrees = missed.subtrees.sorted { $0.key < $1.key }
            missed.rootMissed = false
            for (folder, _) in subtrees { missed.remove(folder) }
            for (folder, old) in subtrees where !isStopping { retry(folder, old) }
        }
        logMissedIfDue(outOfMemory: false)
        if missed.isEmpty {
            missed.nextRetry = nil
            if missed.hadMisses {
                missed.hadMisses = false
                missed.overflowLogged = false
                log.notice("folder watcher of \(root.path): every folder is watched again")
            }
        } else {
            let elapsed = ContinuousClock.now - started
            missed.nextRetry = .now + max(.seconds(rootPollSeconds), elapsed * 10)
        }
        publishMissed()
    }

    /// One subtree: watch what can be watched now, rescan it, report the difference with
    /// `old`, and keep the parts still refused.
    private func retry(_ folder: String, _ old: MissedFolders.Subtree) {
        let failures = addTree(folder, reportFiles: false)
        if let failure = failures.first(where: { $0.path == folder && !Self.isWatchLimit($0.error) }) {
            guard [ENOENT, ENOTDIR, ELOOP].contains(failure.error.errno) else {
                // Unreadable now (EACCES, EIO): what it held says nothing; keep it, try again.
                if folder.isEmpty { missed.rootMissed = true }
                missed.add(folder, old)
                return
            }
            // Gone (its parent's event says so too) — unless it is the root: a missing root
            // says nothing about its assets, and `checkRoot` looks for it again.
            guard !folder.isEmpty else { return }
            for path in old.files.keys.sorted() where !isStopping { handler(.removed(path: path)) }
            return
        }
        let scan = AssetScanner.scan(root, under: folder, limit: missed.maxFiles, walk: FolderWalk(root: root))
        var seen = Set<String>()
        for version in scan.versions where !isStopping {
            seen.insert(version.path)
            if old.files[version.path] != version.fileStatus { handler(.changed(path: version.path)) }
        }
        if !scan.truncated {
            for path in old.files.keys.sorted() where !seen.contains(path) && !scan.isUncertain(path) && !isStopping {
                handler(.removed(path: path))
            }
        }
        // Still refused (here or below): a snapshot each, from this scan when it is the folder.
        let refused = failures.filter { Self.isWatchLimit($0.error) }
        for failure in refused {
            guard failure.path == folder else {
                remember(failure.path, reportFiles: false)
                continue
            }
            if folder.isEmpty { missed.rootMissed = true }
            if scan.truncated {
                overflowMissed()
            } else if !missed.overflowed && !missed.isFull {
                missed.add(folder, Self.subtree(of: scan, under: folder))
            } else {
                remember(folder, reportFiles: false)
            }
        }
    }

    /// Forgets the missed folders at or under `folder` (deleted, moved away, or all of them
    /// before a fresh walk).
    func forgetMissed(under folder: String) {
        guard !missed.isEmpty else { return }
        missed.removeAll(under: folder)
        publishMissed()
    }

    private func publishMissed() {
        coverage.unwatchedFolders.store(missed.unwatchedFolders, ordering: .relaxed)
    }

    /// One warning for the refusals so far, at most once a minute.
    private func logMissedIfDue(outOfMemory: Bool) {
        guard missed.unlogged > 0 else { return }
        let now = ContinuousClock.now
        if let last = missed.loggedAt, now - last < .seconds(60) { return }
        let count = missed.unlogged
        let examples = missed.unloggedExamples.map { $0.isEmpty ? "the root itself" : $0 }.joined(separator: ", ") + (count > 3 ? ", …" : "")
        let limit = Self.maxUserWatches()
        let needed = coverage.watchedFolders.load(ordering: .relaxed) + missed.unwatchedFolders
        // Read from /proc: clamped before any arithmetic.
        let suggested = max(min(limit ?? 8192, 1 << 40), min(needed, 1 << 40)) * 2
        let reason = outOfMemory ? "the kernel has no memory left for inotify watches"
            : "the inotify watch limit fs.inotify.max_user_watches\(limit.map { " (\($0))" } ?? "") is reached"
        log.warning("folder watcher of \(root.path): could not watch \(count) folder\(count == 1 ? "" : "s") (\(examples)) "
                    + "nor what is under \(count == 1 ? "it" : "them"): \(reason); they are tried again and rescanned every \(rootPollSeconds) s "
                    + "or more until they can be watched. Raise the limit: sysctl -w fs.inotify.max_user_watches=\(suggested)")
        missed.unlogged = 0
        missed.unloggedExamples = []
        missed.loggedAt = now
    }

    /// `fs.inotify.max_user_watches`, read for the log line (nil when it cannot be).
    static func maxUserWatches() -> Int? {
        let path = "/proc/sys/fs/inotify/max_user_watches"
        guard let fd = try? systemCall("open \(path)", { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        guard let count = try? bytes.withUnsafeMutableBytes({ buffer in
            try systemCall("read \(path)") { read(fd, buffer.baseAddress, buffer.count) }
        }) else { return nil }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self)
        return Int(text.filter { $0.isASCII && $0.isNumber })
    }
}
