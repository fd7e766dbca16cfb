import ThumbImaging
import ThumbSystem

extension ThumbnailPipeline {
    /// Reconciles the cache with the asset folder, then follows the folder: new and changed
    /// assets are pre-rendered (at batch priority, for the `pregenerated` kinds), changed and
    /// deleted ones lose their thumbnails at once. Stop the returned watcher before `shutdown`.
    public func startWatching() throws(SystemError) -> FolderWatcher {
        let watcher = try FolderWatcher(root: assets, log: configuration.log, rootPollSeconds: configuration.rootPollSeconds) {
            [weak self] event in self?.handle(event)
        }
        try watcher.start()
        beginVouching(on: watcher)
        reconcile()
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
        case .removedFolder(let folder):
            for path in disk.assetPaths() where path.hasPrefix(folder + "/") { invalidate(assetPath: path) }
        case .rescan:
            reconcile()
        }
    }

    /// Drops the thumbnails of assets that are gone and queues the missing pre-renders.
    public func reconcile() {
        let scan = AssetScanner.scanReportingFailures(assets)
        let present = Set(scan.versions.map(\.path))
        for path in disk.assetPaths() where !present.contains(path) && !scan.isUncertain(path) {
            invalidate(assetPath: path)
        }
        for version in scan.versions { pregenerate(version.path) }
    }

    func pregenerate(_ path: String) {
        for (kind, scale) in configuration.pregenerated {
            for format in configuration.pregeneratedFormats(for: kind) {
                prerender(assetPath: path, kind: kind, scale: scale, format: format)
            }
        }
    }
}
