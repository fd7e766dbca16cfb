import Synchronization
import ThumbSystem
import ThumbImaging

/// The pre-render backlog's counters, for `/metrics` and STATUS.
package struct BacklogMetrics: Sendable, Equatable {
    /// Gauges: rows in the index, and assets being pre-rendered from it now.
    package var rows = 0
    package var assetsInFlight = 0
    /// Counters: rows added, rows done (rendered, or found cached, failed for good or gone),
    /// transient failures sent to the back, rows given up after `maxAttempts`, assets refused
    /// at the cap (`PipelineConfiguration.maxBacklogAssets`).
    package var enqueued = 0
    package var drained = 0
    package var retried = 0
    package var gaveUp = 0
    package var refused = 0
}

/// What the backlog asks of the pipeline it feeds (`ThumbnailPipeline`; a test may stand in).
protocol PrerenderScheduling: AnyObject, Sendable {
    /// How many more batch jobs the queue takes now (0 or less when full or shutting down).
    var batchQueueRoom: Int { get }
    /// The key of `kind` for this version, with the asset's focus when the kind's crop follows it.
    func cacheKey(asset: AssetVersion, kind: SlotKind, scale: Int, encoder: EncoderSettings) -> CacheKey
    /// Attaches the pre-renders of one asset in one decision of the pipeline (one decode serves
    /// them), calling `attached` under the pipeline's lock for each job it took (before the job
    /// can finish) and `answered` once per taken job when it is answered.
    func attachPrerenders(_ work: [PrerenderBacklog.Work], of resolved: (absolutePath: String, version: AssetVersion),
                          attached: () -> Void, answered: @escaping @Sendable (Result<CachedThumbnail, ThumbFailure>) -> Void)
        -> PrerenderBacklog.Attachment
}

/// The pre-render backlog's drain: takes backlog rows in order whenever the job queue has room
/// for batch work (a job finished, rows were added), attaches each asset's missing pre-renders
/// at batch priority, and settles the row once they are all answered. Event-driven: kicks
/// schedule one pass on a serial queue; a pass ends when the queue or the backlog has no more
/// room or rows. The rows live in the index (`BacklogStore`), so a restart resumes them.
final class PrerenderBacklog: Sendable {
    struct InFlight {
        var row: BacklogRow
        /// The version the pre-renders were asked for.
        var version: AssetVersion
        var jobsLeft = 0
        /// Still attaching: the row is not settled before that is over.
        var attaching = true
        /// A job was refused (the queue filled meanwhile): the row goes to the back as it is.
        var incomplete = false
        /// A job failed for a reason that may pass (EIO, a worker that could not start).
        var failedTransiently = false
        /// The pipeline stopped under it: the row stays for the next start.
        var keeps = false
    }

    struct State {
        /// Off until the cache's files are reconciled (until then `contains` may vouch for a
        /// file that is gone); off again at shutdown.
        var enabled = false
        var scheduled = false
        /// The last sequence taken: rows after it are next.
        var cursor: Int64 = 0
        var inFlight: [String: InFlight] = [:]
        var jobsInFlight = 0
        var metrics = BacklogMetrics()
    }

    /// One missing pre-render of an asset.
    struct Work {
        var kind: SlotKind
        var scale: Int
        var encoder: EncoderSettings
        var key: CacheKey
    }

    /// What became of an asset's pre-renders at the pipeline.
    enum Attachment {
        case all
        /// The queue filled before the last: what was attached is cached, the rest comes next time.
        case refused
        /// The pipeline is stopping: the row stays for the next start.
        case shuttingDown
    }

    let state = Mutex(State())
    let worker = SerialWorker(name: "thumbd-backlog")
    let stores: CacheStores
    let assets: AssetRoot
    let configuration: PipelineConfiguration
    /// The pipeline's: once it stops, no pass is scheduled and a pass under way ends at its next batch.
    let lifecycle: Lifecycle

    /// Transient failures an asset may have before its row is given up (logged and counted).
    static let maxAttempts = 3
    /// Rows read per look into the index.
    static let batchRows = 64

    init(stores: CacheStores, assets: AssetRoot, configuration: PipelineConfiguration, lifecycle: Lifecycle) {
        self.lifecycle = lifecycle
        self.stores = stores
        self.assets = assets
        self.configuration = configuration
    }

    /// Queues the pre-renders of these assets in the backlog (nothing when no kind is
    /// pre-rendered). `changed`: new versions (a row already there moves to the back); false for
    /// a reconcile's finds (one already there stays where it is).
    func enqueue(_ paths: [String], changed: Bool = true, scheduler: any PrerenderScheduling) {
        guard !configuration.pregenerated.isEmpty, !paths.isEmpty else { return }
        let (added, refused) = stores.backlog.enqueue(paths, maxRows: configuration.maxBacklogAssets, movesExisting: changed)
        state.withLock {
            $0.metrics.enqueued += added
            $0.metrics.refused += refused
        }
        kick(scheduler)
    }

    /// The cache is reconciled: the backlog may drain.
    func enable(scheduler: any PrerenderScheduling) {
        state.withLock { $0.enabled = true }
        kick(scheduler)
    }

    /// Schedules a drain pass unless one is scheduled already (cheap: called after every render).
    func kick(_ scheduler: any PrerenderScheduling) {
        let schedules = state.withLock { state -> Bool in
            guard state.enabled, !lifecycle.isStopping, !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        if schedules { worker.submit { [weak self, weak scheduler] in if let scheduler { self?.drain(scheduler) } } }
    }

    /// Waits for a pass under way (`shutdown`, once the lifecycle stopped: it takes no more rows).
    func waitForPass() {
        worker.waitUntilIdle()
    }

    var metrics: BacklogMetrics {
        var metrics = state.withLock { state in
            var metrics = state.metrics
            metrics.assetsInFlight = state.inFlight.count
            return metrics
        }
        metrics.rows = stores.backlog.rowCount
        return metrics
    }

    /// One pass: rows while there is room for their jobs.
    private func drain(_ scheduler: any PrerenderScheduling) {
        state.withLock { $0.scheduled = false }
        let jobsPerAsset = configuration.pregenerated.reduce(0) { $0 + configuration.pregeneratedFormats(for: $1.kind).count }
        guard jobsPerAsset > 0 else { return settleAllRows() }
        // Backlog work may hold a quarter of the queue (at least one job), and only what the
        // batch share leaves free: visible requests, prefetches and batches keep theirs.
        let target = max(1, configuration.maxQueuedJobs / 4)
        while true {
            let queueRoom = scheduler.batchQueueRoom
            let (inFlightJobs, cursor) = state.withLock { ($0.jobsInFlight, $0.cursor) }
            if lifecycle.isStopping || queueRoom <= 0 { return }
            var assets = min(target - inFlightJobs, queueRoom) / jobsPerAsset
            if assets <= 0 && inFlightJobs == 0 { assets = 1 }  // an asset of many kinds still goes, one at a time
            guard assets > 0 else { return }
            let rows = stores.backlog.batch(after: cursor, limit: min(assets, Self.batchRows))
            guard !rows.isEmpty else { return }
            for row in rows {
                state.withLock { $0.cursor = max($0.cursor, row.sequence) }
                startPrerenders(of: row, scheduler: scheduler)
            }
        }
    }

    /// No kind is pre-rendered (any more: the rows come from a run with another config): every
    /// row is unnecessary.
    private func settleAllRows() {
        while !lifecycle.isStopping {
            let cursor = state.withLock { $0.cursor }
            let rows = stores.backlog.batch(after: cursor, limit: Self.batchRows)
            guard let last = rows.last else { return }
            state.withLock { $0.cursor = max($0.cursor, last.sequence) }
            for row in rows { settle(row, transient: false) }
        }
    }

    /// Attaches the missing pre-renders of one row's asset, or settles the row at once when
    /// there are none (cached, failed for good, gone).
    private func startPrerenders(of row: BacklogRow, scheduler: any PrerenderScheduling) {
        let resolved: (absolutePath: String, version: AssetVersion)
        do {
            resolved = try assets.resolve(row.assetPath)
        } catch {
            settle(row, transient: !ThumbFailure(error).disposition.isPermanent)
            return
        }
        guard stores.failures.failure(for: resolved.version) == nil else { return settle(row, transient: false) }
        var missing: [Work] = []
        for (kind, scale) in configuration.pregenerated {
            for format in configuration.pregeneratedFormats(for: kind) {
                let encoder = configuration.encoder(for: kind, format: format)
                let key = scheduler.cacheKey(asset: resolved.version, kind: kind, scale: scale, encoder: encoder)
                if !stores.thumbnails.contains(key) { missing.append(Work(kind: kind, scale: scale, encoder: encoder, key: key)) }
            }
        }
        guard !missing.isEmpty else { return settle(row, transient: false) }
        state.withLock { $0.inFlight[row.assetPath] = InFlight(row: row, version: resolved.version) }
        let path = row.assetPath
        let attachment = scheduler.attachPrerenders(missing, of: resolved, attached: {
            state.withLock {
                $0.inFlight[path]?.jobsLeft += 1
                $0.jobsInFlight += 1
            }
        }, answered: { [weak self, weak scheduler] result in
            guard let self, let scheduler else { return }
            prerenderAnswered(path, result, scheduler: scheduler)
        })
        switch attachment {
        case .all: break
        case .refused: state.withLock { $0.inFlight[path]?.incomplete = true }
        case .shuttingDown: state.withLock { $0.inFlight[path]?.keeps = true }
        }
        let finished = state.withLock { state -> Bool in
            state.inFlight[path]?.attaching = false
            return state.inFlight[path]?.jobsLeft == 0
        }
        if finished { settleInFlight(path) }
    }

    /// A backlog job is answered: its outcome counts towards its row's.
    private func prerenderAnswered(_ path: String, _ result: Result<CachedThumbnail, ThumbFailure>, scheduler: any PrerenderScheduling) {
        let finished = state.withLock { state -> Bool in
            guard var entry = state.inFlight[path] else { return false }
            state.jobsInFlight -= 1
            entry.jobsLeft -= 1
            switch result {
            case .success(let thumbnail) where !thumbnail.isStored:
                // Rendered but not written (a cache write failed): answered from memory, yet
                // the pre-render is not done. Tried again, up to `maxAttempts`.
                entry.failedTransiently = true
            case .success:
                break
            case .failure(let failure):
                if failure == .shuttingDown {
                    entry.keeps = true
                } else if !failure.disposition.isPermanent && failure.disposition.negativeRecord == nil {
                    entry.failedTransiently = true
                }
            }
            state.inFlight[path] = entry
            return entry.jobsLeft == 0 && !entry.attaching
        }
        if finished { settleInFlight(path) }
        kick(scheduler)
    }

    private func settleInFlight(_ path: String) {
        guard let entry = state.withLock({ $0.inFlight.removeValue(forKey: path) }) else { return }
        if entry.keeps { return }
        // Not a failure: a job was refused (what was attached is cached now, the rest comes next
        // time), or the asset changed while it was pre-rendered (a change whose event was lost).
        let changed = !entry.failedTransiently && (try? assets.resolve(path))?.version != entry.version
        if (entry.incomplete || changed) && !entry.failedTransiently {
            _ = stores.backlog.retry(entry.row, countsAttempt: false)
            return
        }
        settle(entry.row, transient: entry.failedTransiently)
    }

    /// Done (or unnecessary): the row goes. A transient failure: to the back, or, after
    /// `maxAttempts`, given up with a log line.
    private func settle(_ row: BacklogRow, transient: Bool) {
        guard transient else {
            if stores.backlog.finish(row, maxRows: configuration.maxBacklogAssets) { state.withLock { $0.metrics.drained += 1 } }
            return
        }
        guard let moved = stores.backlog.retry(row, countsAttempt: true) else { return }
        guard moved.attempts >= Self.maxAttempts else {
            state.withLock { $0.metrics.retried += 1 }
            return
        }
        guard stores.backlog.finish(moved, maxRows: configuration.maxBacklogAssets) else { return }
        let gaveUp = state.withLock { state -> Int in
            state.metrics.gaveUp += 1
            return state.metrics.gaveUp
        }
        // The first at warning, then one line a hundred: a failing disk must not flood the log.
        if gaveUp == 1 {
            configuration.log.warning("pre-rendering \(row.assetPath) failed \(moved.attempts) times: given up (it is rendered when asked for)")
        } else if gaveUp % 100 == 0 {
            configuration.log.notice("pre-rendering given up for \(gaveUp) assets so far (latest \(row.assetPath))")
        }
    }
}
