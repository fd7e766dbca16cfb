/// Deleted assets' index rows, removed a batch at a time.
///
/// Each `.removed` event was one SQLite transaction: ~10 pages written to the WAL (the row, its
/// digest, asset and use indexes), a checkpoint with two fdatasyncs every hundred events. An
/// `rm -rf` of 10k assets wrote ~400 MB of WAL and took 8–16 s to handle beside a 100k index.
/// Now the watcher's `.removed` events drop the memory entries and vouches at once and gather
/// the paths; the rows go in one transaction when the watcher has read its queue empty (or
/// `removalBatch` paths are waiting, or any other event comes, which must see them gone first).
///
/// Meanwhile nothing can serve a gathered asset from the disk cache: its file is gone, so the
/// request's resolve fails before any index look-up.
extension ThumbnailPipeline {
    /// Paths gathered at most before their rows are removed.
    static let removalBatch = 512

    /// The watcher's handler: `handle`, with `.removed` rows gathered.
    func handleWatched(_ event: FolderWatcher.Event) {
        guard case .removed(let path) = event else {
            flushRemovals()
            return handle(event)
        }
        state.withLock { $0.metrics.watcherEvents += 1 }
        dropVouches(for: event)
        memory.removeThumbnails(ofAsset: path)
        let full = pendingRemovals.withLock { pending -> Bool in
            pending.append(path)
            return pending.count >= Self.removalBatch
        }
        if full { flushRemovals() }
    }

    /// Removes the gathered assets' rows and files (one transaction).
    func flushRemovals() {
        let paths = pendingRemovals.withLock { pending -> [String] in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        if !paths.isEmpty {
            disk.removeThumbnails(ofAssets: paths)
            disk.removeFocus(ofAssets: paths)
        }
    }
}
