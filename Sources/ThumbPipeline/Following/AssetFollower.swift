#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ThumbImaging
import ThumbSystem

/// Follows the asset folder for the pipeline: the watcher's events (a changed asset loses its
/// thumbnails at once and its pre-renders go to the backlog; a deleted one loses its rows, a
/// batch at a time), the reconciles that walk the folder beside the index (at start, after a
/// `.rescan`, or when no watcher can run), and the vouching that lets a hit in a watched folder
/// skip its file. It holds no pipeline lock: what it drops, it drops from the caches and the
/// index, and what it finds goes to the backlog.
final class AssetFollower: Sendable {
    let assets: AssetRoot
    let stores: CacheStores
    let memory: MemoryCache
    let configuration: PipelineConfiguration
    let backlog: PrerenderBacklog
    /// The background reconciles' queue and progress (shared with the cache's own reconcile).
    let startup: PipelineStartup
    /// What the folder watcher covers (for `/metrics`), kept across watchers.
    let coverage = WatchCoverage()
    /// Deleted assets whose index rows go in the next batch (see `handleWatched`).
    let pendingRemovals = Mutex<[String]>([])
    /// The watcher vouched versions rest on (nil: none running, nothing vouched; `VouchedVersions`).
    let vouching = Mutex<VouchingWatch?>(nil)
    /// Watcher events handled (for `/metrics`).
    let watcherEvents = Atomic<Int>(0)
    /// Removals the watcher handled: a reconcile's batch of paths seen before one of them is
    /// checked again before it is listed (the file may be gone and unlisted since its visit).
    let removalsSeen = Atomic<Int>(0)
    /// The pipeline the backlog feeds and whose keys the reconcile forms, bound once it exists.
    let scheduler = PipelineBinding<any PrerenderScheduling>()

    init(assets: AssetRoot, stores: CacheStores, memory: MemoryCache, configuration: PipelineConfiguration,
         backlog: PrerenderBacklog, startup: PipelineStartup) {
        self.assets = assets
        self.stores = stores
        self.memory = memory
        self.configuration = configuration
        self.backlog = backlog
        self.startup = startup
    }

    /// Starts a folder watcher whose events this follower handles, vouches on it, and reconciles
    /// the folder with the index in the background. Stop the returned watcher before `shutdown`.
    func startWatching() throws(SystemError) -> FolderWatcher {
        let watcher = try FolderWatcher(root: assets, log: configuration.log, rootPollSeconds: configuration.rootPollSeconds,
                                        coverage: coverage, lifecycle: startup.lifecycle,
                                        drained: { [weak self] in self?.flushRemovals() }) {
            [weak self] event in self?.handleWatched(event)
        }
        try watcher.start()
        beginVouching(on: watcher)
        reconcileInBackground()
        return watcher
    }

    /// Drops every thumbnail of an asset (memory and disk) and its negative entry.
    func invalidate(assetPath: String) {
        memory.removeThumbnails(ofAsset: assetPath)
        stores.thumbnails.removeThumbnails(ofAsset: assetPath)
    }

    /// New or changed assets' pre-renders, to the backlog (`PrerenderBacklog.enqueue`).
    func enqueuePrerenders(_ paths: [String], changed: Bool = true) {
        guard let pipeline = scheduler.ability else { return }
        backlog.enqueue(paths, changed: changed, scheduler: pipeline)
    }

    func handle(_ event: FolderWatcher.Event) {
        watcherEvents.add(1, ordering: .relaxed)
        dropVouches(for: event)
        switch event {
        case .changed(let path):
            // Older versions' thumbnails can never be served (the key holds the version);
            // dropping them frees their space now, not at eviction.
            invalidate(assetPath: path)
            stores.listing.add([path])
            enqueuePrerenders([path])
        case .removed(let path):
            removalsSeen.add(1, ordering: .relaxed)  // before the rows go, as in flushRemovals
            invalidate(assetPath: path)
            stores.focus.removeFocus(ofAssets: [path])
            stores.listing.remove([path])
        case .removedFolder(let folder):
            removalsSeen.add(1, ordering: .relaxed)
            // The folder's rows only (a range of the index), dropped in one transaction.
            // By bytes: twins in the folder each lose their memory entries (and vouches).
            for path in stores.thumbnails.purge(under: folder).assetPaths { memory.removeThumbnails(ofAsset: path.text) }
            stores.focus.removeFocus(under: folder)
            stores.listing.remove(under: folder)
        case .rescan:
            reconcileInBackground()
        }
    }

    // MARK: - Reconciles

    /// Reconciles the asset folder with the index in the background, after the cache's own
    /// reconcile: at start (`startWatching`), after a `.rescan`, or when the watcher cannot run.
    /// Asked again while one runs, it runs once more after it (never twice at once).
    func reconcileInBackground() {
        let starts = startup.assetPasses.withLock { passes -> Bool in
            if passes.scheduled {
                passes.again = true
                return false
            }
            passes.scheduled = true
            return true
        }
        guard starts else { return }
        startup.worker.submit { [self] in
            repeat {
                startup.assetPasses.withLock { $0.again = false }
                guard !startup.isStopping else { return }
                let completed = reconcileAssets(shouldStop: { startup.isStopping }) { checked in
                    startup.progress.withLock { $0.assetsChecked = checked }
                }
                if completed { startup.progress.withLock { $0.assetsReconciled = true } }
                releaseFreedHeap()
            } while startup.assetPasses.withLock { passes -> Bool in
                if passes.again { return true }
                passes.scheduled = false
                return false
            }
        }
    }

    /// Drops the thumbnails of assets that are gone and queues the missing pre-renders, on this
    /// thread (`reconcileInBackground` is the usual way).
    func reconcile() {
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
        var indexed = IndexedAssetStream(index: stores.index)
        var queued: [String] = []
        var seen: [String] = []
        var removalsAtBatchStart = removalsSeen.load(ordering: .relaxed)
        func listSeen() {
            let removals = removalsSeen.load(ordering: .relaxed)
            stores.listing.add(removals == removalsAtBatchStart ? seen : seen.filter(isAssetNow))
            seen.removeAll(keepingCapacity: true)
            removalsAtBatchStart = removals
        }
        var checked = 0
        func isUncertain(_ path: String) -> Bool {
            if rootUnreadable || unreadable.contains(path) { return true }
            // By bytes: a '/' joined to a mark is still a separator (`ExactPath.components`).
            var prefix = Substring(path)
            while let slash = prefix.utf8.lastIndex(of: UInt8(ascii: "/")) {
                prefix = Substring(prefix.utf8[..<slash])
                if unreadable.contains(String(prefix)) { return true }
            }
            return false
        }
        func gone(_ path: String) {
            if !isUncertain(path) && !isAssetNow(path) {
                invalidate(assetPath: path)
                stores.listing.remove([path])
            }
        }
        let completed = AssetScanner.walkSorted(assets) { failure in
            if failure.path.isEmpty { rootUnreadable = true } else { unreadable.insert(failure.path) }
        } visit: { version in
            while let head = indexed.peek(), CacheIndex.precedes(head, version.path) {
                gone(head)
                indexed.advance()
            }
            // Bytes, as the index orders them: an NFC row is not the NFD file the walk found.
            if let head = indexed.peek(), head.utf8.elementsEqual(version.path.utf8) { indexed.advance() }
            seen.append(version.path)
            if seen.count >= Self.reconcileBacklogBatch { listSeen() }
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
        listSeen()
        enqueuePrerenders(queued, changed: false)
        progress(checked)
        return completed && !shouldStop()
    }

    /// Assets queued for pre-rendering per transaction by the reconcile.
    static let reconcileBacklogBatch = 256

    /// Whether a path the walk did not list is an asset after all: written since its folder
    /// was listed (a regular file of an image's name, nothing hidden on its way).
    func isAssetNow(_ path: String) -> Bool {
        let components = ExactPath.components(path)
        guard let name = components.last, AssetNames.isImageName(name), !components.contains(where: AssetNames.isHidden),
              !AssetNames.isExcluded(relative: path, in: assets) else { return false }
        var status = stat()
        let absolute = AssetNames.absolute(path, in: assets)
        return (try? systemCall("lstat \(path)", { lstat(absolute, &status) })) != nil && (status.st_mode & S_IFMT) == S_IFREG
    }

    /// Whether some pre-render of this version is missing (and it is not known to fail).
    func needsPrerender(_ version: AssetVersion) -> Bool {
        guard !configuration.pregenerated.isEmpty, stores.failures.failure(for: version) == nil,
              let keys = scheduler.ability else { return false }
        for (kind, scale) in configuration.pregenerated {
            for format in configuration.pregeneratedFormats(for: kind) {
                let key = keys.cacheKey(asset: version, kind: kind, scale: scale, encoder: configuration.encoder(for: kind, format: format))
                if !stores.thumbnails.contains(key) { return true }
            }
        }
        return false
    }

    /// The start-up (or rescan) reconcile: the focus of every asset that is no longer there goes
    /// (an asset with a focus may have no thumbnail row for the walk to notice). `isUncertain`:
    /// the path lies in a folder the walk could not read.
    func forgetFocusOfGoneAssets(isUncertain: (String) -> Bool) {
        let gone = stores.focus.assetPathsWithFocus().filter { !isUncertain($0) && !isAssetNow($0) }
        if !gone.isEmpty { stores.focus.removeFocus(ofAssets: gone) }
    }

    // MARK: - Removals
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

    /// Paths gathered at most before their rows are removed.
    static let removalBatch = 512

    /// The watcher's handler: `handle`, with `.removed` rows gathered.
    func handleWatched(_ event: FolderWatcher.Event) {
        guard case .removed(let path) = event else {
            flushRemovals()
            return handle(event)
        }
        watcherEvents.add(1, ordering: .relaxed)
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
            removalsSeen.add(1, ordering: .relaxed)  // before the rows go: a reconcile's batch listed after this checks
            stores.thumbnails.removeThumbnails(ofAssets: paths)
            stores.focus.removeFocus(ofAssets: paths)
            stores.listing.remove(paths)
        }
    }

    // MARK: - Vouching

    /// From now on versions resolved in folders `watcher` watches are vouched for.
    func beginVouching(on watcher: FolderWatcher) {
        let watch = VouchingWatch.make(watcher: watcher, root: assets, log: configuration.log)
        vouching.withLock { $0 = watch }
        if watch != nil { memory.startVouching(authority: watcher) } else { memory.stopVouching() }
    }

    /// Nothing is vouched for any more (shutdown; a stopped watcher is noticed at the next hit).
    func endVouching() {
        vouching.withLock { $0 = nil }
        memory.stopVouching()
    }

    /// What an event makes doubtful: that asset's version, a removed folder's, or all of them.
    /// Done before the event's other work, so that no hit is answered from a doubtful version
    /// while the caches are being cleaned up.
    func dropVouches(for event: FolderWatcher.Event) {
        switch event {
        case .changed(let path), .removed(let path): memory.dropVouch(ofAsset: path)
        case .removedFolder(let folder): memory.dropVouches(underFolder: folder)
        case .rescan: memory.dropAllVouches()
        }
    }
}

/// The index's asset paths in byte order, read a batch at a time.
struct IndexedAssetStream {
    let index: CacheIndex
    private var batch: [String] = []
    private var position = 0
    private var exhausted = false

    init(index: CacheIndex) {
        self.index = index
    }

    static let batchSize = 512

    mutating func peek() -> String? {
        if position == batch.count && !exhausted {
            let after = batch.last ?? ""
            batch = index.indexedAssetPaths(after: after, limit: Self.batchSize)
            position = 0
            exhausted = batch.count < Self.batchSize
        }
        return position < batch.count ? batch[position] : nil
    }

    mutating func advance() {
        position += 1
    }
}
