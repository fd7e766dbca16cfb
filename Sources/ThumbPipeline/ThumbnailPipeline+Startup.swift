import Dispatch
import Synchronization
import ThumbImaging
package import ThumbSystem

/// Holds the background reconcile at its start until `release()`: tests use it to look at a
/// pipeline (or a daemon) that serves while its reconcile has not run. Stopping the pipeline
/// releases it too.
package final class ReconcileGate: Sendable {
    private let held: Mutex<Bool>
    private let opened = DispatchSemaphore(value: 0)

    package init(held: Bool = true) {
        self.held = Mutex(held)
    }

    package func release() {
        if held.withLock({ held in defer { held = false }; return held }) { opened.signal() }
    }

    /// Waits while held (one waiter at a time).
    package func pass() {
        if held.withLock({ $0 }) { opened.wait() }
    }
}

/// How far the start-up work done in the background has come: the cache's files reconciled
/// with its index, then the asset folder with the index. `/readyz` and the daemon's STATUS read it.
package struct StartupProgress: Sendable, Equatable {
    package var cacheFiles = CacheIndex.FileReconcileProgress()
    package var cacheReconciled = false
    /// Assets looked at by the asset reconcile under way (or the last one).
    package var assetsChecked = 0
    package var assetsReconciled = false

    /// Both reconciles are done: what is served and pre-rendered matches the folders.
    package var isReady: Bool { cacheReconciled && assetsReconciled }

    /// What is not done yet: "cache", "assets".
    package var pending: [String] {
        (cacheReconciled ? [] : ["cache"]) + (assetsReconciled ? [] : ["assets"])
    }
}

/// The pipeline's background reconciles: one serial worker, the pipeline's lifecycle looked at
/// between batches (its stop also opens the gate), and the progress.
final class PipelineStartup: Sendable {
    let worker = SerialWorker(name: "thumbd-reconcile")
    let progress = Mutex(StartupProgress())
    let lifecycle: Lifecycle
    let gate: ReconcileGate?
    /// An asset reconcile is queued or running / another was asked for meanwhile.
    let assetPasses = Mutex<(scheduled: Bool, again: Bool)>((false, false))

    init(gate: ReconcileGate?, lifecycle: Lifecycle) {
        self.gate = gate
        self.lifecycle = lifecycle
        lifecycle.onStop { gate?.release() }
    }

    var isStopping: Bool { lifecycle.isStopping }
}

extension ThumbnailPipeline {
    /// Where start-up stands (see `StartupProgress`).
    package var startupProgress: StartupProgress { startup.progress.withLock { $0 } }

    /// From `init`: the cache's files are reconciled with its index in the background (hits are
    /// served from the index meanwhile); once that is done the backlog starts to drain.
    func reconcileCacheInBackground() {
        startup.worker.submit { [self] in
            startup.gate?.pass()
            guard !startup.isStopping else { return }
            stores.index.reconcileFiles(shouldStop: { startup.isStopping }) { files in
                startup.progress.withLock { $0.cacheFiles = files }
            }
            guard !startup.isStopping else { return }
            startup.progress.withLock { $0.cacheReconciled = true }
            Self.returnFreedMemory()
            backlog.enable(scheduler: self)
        }
    }

    /// Reconciles the asset folder with the index in the background (`AssetFollower`): at start
    /// (`startWatching`), after a `.rescan`, or when the watcher cannot run.
    package func reconcileInBackground() {
        follower.reconcileInBackground()
    }

    /// Follows the asset folder (`AssetFollower.startWatching`). Stop the returned watcher before `shutdown`.
    package func startWatching() throws(SystemError) -> FolderWatcher {
        try follower.startWatching()
    }

    /// Waits until the reconciles queued so far are done (`shutdown`, tests).
    func waitForBackgroundReconcile() {
        startup.worker.waitUntilIdle()
    }

    /// A reconcile's listings and batches are freed when it ends; glibc keeps freed heap in its
    /// arenas unless asked, and the daemon then idles at its start-up peak.
    static func returnFreedMemory() {
        releaseFreedHeap()
    }
}
