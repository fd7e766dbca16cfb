#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
package import ThumbSystem

extension ThumbnailPipeline {
    /// Follows the asset folder and reconciles the index with it in the background (after the
    /// cache's own reconcile): new and changed assets are queued for pre-rendering (the backlog,
    /// drained at batch priority, for the `pregenerated` kinds), changed and deleted ones lose
    /// their thumbnails at once. Stop the returned watcher before `shutdown`.
    package func startWatching() throws(SystemError) -> FolderWatcher {
        let watcher = try FolderWatcher(root: assets, log: configuration.log, rootPollSeconds: configuration.rootPollSeconds,
                                        coverage: watchCoverage, drained: { [weak self] in self?.flushRemovals() }) {
            [weak self] event in self?.handleWatched(event)
        }
        try watcher.start()
        beginVouching(on: watcher)
        reconcileInBackground()
        return watcher
    }

    func handle(_ event: FolderWatcher.Event) {
        state.withLock { $0.metrics.watcherEvents += 1 }
        dropVouches(for: event)
        switch event {
        case .changed(let path):
            // Older versions' thumbnails can never be served (the key holds the version);
            // dropping them frees their space now, not at eviction.
            invalidate(assetPath: path)
            pregenerate(path)
        case .removed(let path):
            invalidate(assetPath: path)
            disk.removeFocus(ofAssets: [path])
        case .removedFolder(let folder):
            // The folder's rows only (a range of the index), dropped in one transaction.
            for path in disk.removeThumbnails(under: folder) { memory.removeThumbnails(ofAsset: path) }
            disk.removeFocus(under: folder)
        case .rescan:
            reconcileInBackground()
        }
    }

    /// Drops the thumbnails of assets that are gone and queues the missing pre-renders, on this
    /// thread (`reconcileInBackground` is the usual way).
    package func reconcile() {
        reconcileAssets(shouldStop: { false }, progress: { _ in })
    }

    /// Walks the asset folder and the index's asset paths side by side, both in byte order (see
    /// `AssetScanner.walkSorted`), holding one folder's listing and one batch of paths: a path
    /// the index has and the folder not is gone (unless it lies in a folder that could not be
    /// read, or has appeared since its folder was listed); an asset whose pre-renders are not all
    /// cached, and that has no failure recorded, goes to the backlog. False when stopped.
    @discardableResult
    func reconcileAssets(shouldStop: () -> Bool, progress: (Int) -> Void) -> Bool {
        var unreadable: Set<String> = []
        var rootUnreadable = false
        var indexed = IndexedAssetStream(disk: disk)
        var queued: [String] = []
        var checked = 0
        func isUncertain(_ path: String) -> Bool {
            if rootUnreadable || unreadable.contains(path) { return true }
            var prefix = Substring(path)
            while let slash = prefix.lastIndex(of: "/") {
                prefix = prefix[..<slash]
                if unreadable.contains(String(prefix)) { return true }
            }
            return false
        }
        func gone(_ path: String) {
            if !isUncertain(path) && !isAssetNow(path) { invalidate(assetPath: path) }
        }
        let completed = AssetScanner.walkSorted(assets) { failure in
            if failure.path.isEmpty { rootUnreadable = true } else { unreadable.insert(failure.path) }
        } visit: { version in
            while let head = indexed.peek(), DiskCache.precedes(head, version.path) {
                gone(head)
                indexed.advance()
            }
            if indexed.peek() == version.path { indexed.advance() }
            if needsPrerender(version) {
                queued.append(version.path)
                if queued.count >= Self.reconcileBacklogBatch {
                    enqueuePrerenders(queued, changed: false)
                    queued.removeAll(keepingCapacity: true)
                }
            }
            checked += 1
            if checked % 1024 == 0 { progress(checked) }
            return !shouldStop()
        }
        if completed {
            while let head = indexed.peek() {
                if shouldStop() { break }
                gone(head)
                indexed.advance()
            }
            forgetFocusOfGoneAssets(isUncertain: isUncertain)
        }
        enqueuePrerenders(queued, changed: false)
        progress(checked)
        return completed && !shouldStop()
    }

    /// Assets queued for pre-rendering per transaction by the reconcile.
    static let reconcileBacklogBatch = 256

    /// Whether a path the walk did not list is an asset after all: written since its folder
    /// was listed (a regular file of an image's name, nothing hidden on its way).
    func isAssetNow(_ path: String) -> Bool {
        let components = path.split(separator: "/")
        guard let name = components.last, AssetNames.isImageName(name), !components.contains(where: AssetNames.isHidden) else { return false }
        var status = stat()
        let absolute = AssetNames.absolute(path, in: assets)
        return (try? systemCall("lstat \(path)", { lstat(absolute, &status) })) != nil && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// Whether some pre-render of this version is missing (and it is not known to fail).
    func needsPrerender(_ version: AssetVersion) -> Bool {
        guard !configuration.pregenerated.isEmpty, disk.failure(for: version) == nil else { return false }
        for (kind, scale) in configuration.pregenerated {
            for format in configuration.pregeneratedFormats(for: kind) {
                let key = cacheKey(asset: version, kind: kind, scale: scale, encoder: configuration.encoder(for: kind, format: format))
                if !disk.contains(key) { return true }
            }
        }
        return false
    }

    /// A new or changed asset: its pre-renders wait in the backlog.
    func pregenerate(_ path: String) {
        enqueuePrerenders([path])
    }
}

/// The index's asset paths in byte order, read a batch at a time.
struct IndexedAssetStream {
    let disk: DiskCache
    private var batch: [String] = []
    private var position = 0
    private var exhausted = false

    init(disk: DiskCache) {
        self.disk = disk
    }

    static let batchSize = 512

    mutating func peek() -> String? {
        if position == batch.count && !exhausted {
            let after = batch.last ?? ""
            batch = disk.indexedAssetPaths(after: after, limit: Self.batchSize)
            position = 0
            exhausted = batch.count < Self.batchSize
        }
        return position < batch.count ? batch[position] : nil
    }

    mutating func advance() {
        position += 1
    }
}
