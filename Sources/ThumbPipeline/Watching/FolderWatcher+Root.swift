/// The watcher's own troubles, logged for the operator: the asset root going away (deleted,
/// moved, replaced, moved with a renamed parent) and coming back, and lost events.
extension FolderWatcher {
    /// Whether the root at its path is still the folder watched; re-arms once one is back.
    func checkRoot() {
        // A root the watch limit refused is the retries' (`FolderWatcher+Missed`), not lost.
        guard !missed.rootMissed else { return }
        let current = FolderIdentity(of: root.path)
        if let watched = watchedRoot.withLock({ $0 }) {
            // Moved or replaced without an event for the root itself (a parent was renamed).
            if current != watched { loseRoot("is no longer the folder watched at that path") }
        } else if current != nil {
            let failures = addTree("", reportFiles: false)
            let refusedByLimit = failures.contains { $0.path.isEmpty && Self.isWatchLimit($0.error) }
            guard refusedByLimit || (!failures.contains(where: { $0.path.isEmpty }) && watchedRoot.withLock({ $0 }) != nil) else { return }
            noteMissed(failures, reportFiles: false)
            log.notice("asset root \(root.path) is back: watching it again and reconciling the cache with it")
            handler(.rescan)
        }
    }

    /// The root went away: every watch goes, the consumer reconciles, and `checkRoot` looks
    /// for its return at each poll timeout.
    func loseRoot(_ what: String) {
        guard watchedRoot.withLock({ $0 }) != nil else { return }
        watchedRoot.withLock { $0 = nil }
        dropAll()
        log.warning("asset root \(root.path) \(what): its watch is gone; looking for it every \(rootPollSeconds) s "
                    + "(thumbnails are still rendered on request)")
        handler(.rescan)
    }

    /// Lost events are logged at warning: the first at once, then at most one line a minute
    /// with the count, so an overflow storm cannot flood the log.
    func noteOverflow() {
        coverage.queueOverflows.add(1, ordering: .relaxed)
        overflowsUnlogged += 1
        let now = ContinuousClock.now
        if let last = overflowLoggedAt, now - last < .seconds(60) { return }
        log.warning("inotify queue of the folder watcher overflowed (\(overflowsUnlogged) time\(overflowsUnlogged == 1 ? "" : "s"), "
                    + "events lost): rescanning \(root.path); raise fs.inotify.max_queued_events if this repeats")
        overflowsUnlogged = 0
        overflowLoggedAt = now
    }
}
