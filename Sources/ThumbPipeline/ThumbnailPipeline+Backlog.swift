import Dispatch
import Synchronization
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

/// The drain: takes backlog rows in order whenever the job queue has room for batch work (a job
/// finished, rows were added), attaches each asset's missing pre-renders at batch priority, and
/// settles the row once they are all answered. Event-driven: kicks schedule one pass on a
/// serial queue; a pass ends when the queue or the backlog has no more room or rows.
final class BacklogDrain: Sendable {
    struct InFlight {
        var row: DiskCache.BacklogRow
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
        var stopped = false
        var scheduled = false
        /// The last sequence taken: rows after it are next.
        var cursor: Int64 = 0
        var inFlight: [String: InFlight] = [:]
        var jobsInFlight = 0
        var metrics = BacklogMetrics()
    }

    let state = Mutex(State())
    let queue = DispatchQueue(label: "thumbd-backlog", qos: .utility)

    /// Transient failures an asset may have before its row is given up (logged and counted).
    static let maxAttempts = 3
    /// Rows read per look into the index.
    static let batchRows = 64
}

extension ThumbnailPipeline {
    /// Queues the pre-renders of these assets in the backlog (nothing when no kind is
    /// pre-rendered). `changed`: new versions (a row already there moves to the back); false for
    /// a reconcile's finds (one already there stays where it is).
    func enqueuePrerenders(_ paths: [String], changed: Bool = true) {
        guard !configuration.pregenerated.isEmpty, !paths.isEmpty else { return }
        let (added, refused) = disk.enqueueBacklog(paths, maxRows: configuration.maxBacklogAssets, movesExisting: changed)
        backlog.state.withLock {
            $0.metrics.enqueued += added
            $0.metrics.refused += refused
        }
        kickBacklog()
    }

    /// The cache is reconciled: the backlog may drain.
    func enableBacklog() {
        backlog.state.withLock { $0.enabled = true }
        kickBacklog()
    }

    /// Schedules a drain pass unless one is scheduled already (cheap: called after every render).
    func kickBacklog() {
        let schedules = backlog.state.withLock { state -> Bool in
            guard state.enabled, !state.stopped, !state.scheduled else { return false }
            state.scheduled = true
            return true
        }
        if schedules { backlog.queue.async { [weak self] in self?.drainBacklog() } }
    }

    /// Stops taking rows and waits for a pass under way (`shutdown`).
    func stopBacklog() {
        backlog.state.withLock { $0.stopped = true }
        backlog.queue.sync {}
    }

    var backlogMetrics: BacklogMetrics {
        var metrics = backlog.state.withLock { state in
            var metrics = state.metrics
            metrics.assetsInFlight = state.inFlight.count
            return metrics
        }
        metrics.rows = disk.backlogRowCount
        return metrics
    }

    /// One pass: rows while there is room for their jobs.
    private func drainBacklog() {
        backlog.state.withLock { $0.scheduled = false }
        let jobsPerAsset = configuration.pregenerated.reduce(0) { $0 + configuration.pregeneratedFormats(for: $1.kind).count }
        guard jobsPerAsset > 0 else { return settleAllRows() }
        // Backlog work may hold a quarter of the queue (at least one job), and only what the
        // batch share leaves free: visible requests, prefetches and batches keep theirs.
        let target = max(1, configuration.maxQueuedJobs / 4)
        while true {
            let queueRoom = state.withLock { $0.shuttingDown ? 0 : $0.jobs.queueLimit(for: .batch) - $0.jobs.queuedJobs }
            let (inFlightJobs, cursor, stopped) = backlog.state.withLock { ($0.jobsInFlight, $0.cursor, $0.stopped) }
            if stopped || queueRoom <= 0 { return }
            var assets = min(target - inFlightJobs, queueRoom) / jobsPerAsset
            if assets <= 0 && inFlightJobs == 0 { assets = 1 }  // an asset of many kinds still goes, one at a time
            guard assets > 0 else { return }
            let rows = disk.backlogBatch(after: cursor, limit: min(assets, BacklogDrain.batchRows))
            guard !rows.isEmpty else { return }
            for row in rows {
                backlog.state.withLock { $0.cursor = max($0.cursor, row.sequence) }
                startPrerenders(of: row)
            }
        }
    }

    /// No kind is pre-rendered (any more: the rows come from a run with another config): every
    /// row is unnecessary.
    private func settleAllRows() {
        while !backlog.state.withLock({ $0.stopped }) {
            let cursor = backlog.state.withLock { $0.cursor }
            let rows = disk.backlogBatch(after: cursor, limit: BacklogDrain.batchRows)
            guard let last = rows.last else { return }
            backlog.state.withLock { $0.cursor = max($0.cursor, last.sequence) }
            for row in rows { settle(row, transient: false) }
        }
    }

    /// Attaches the missing pre-renders of one row's asset, or settles the row at once when
    /// there are none (cached, failed for good, gone).
    private func startPrerenders(of row: DiskCache.BacklogRow) {
        let resolved: (absolutePath: String, version: AssetVersion)
        do {
            resolved = try assets.resolve(row.assetPath)
        } catch {
            settle(row, transient: !ThumbFailure(error).disposition.isPermanent)
            return
        }
        guard disk.failure(for: resolved.version) == nil else { return settle(row, transient: false) }
        var missing: [(kind: SlotKind, scale: Int, encoder: EncoderSettings, key: CacheKey)] = []
        for (kind, scale) in configuration.pregenerated {
            for format in configuration.pregeneratedFormats(for: kind) {
                let encoder = configuration.encoder(for: kind, format: format)
                let key = cacheKey(asset: resolved.version, kind: kind, scale: scale, encoder: encoder)
                if !disk.contains(key) { missing.append((kind, scale, encoder, key)) }
            }
        }
        guard !missing.isEmpty else { return settle(row, transient: false) }
        backlog.state.withLock { $0.inFlight[row.assetPath] = BacklogDrain.InFlight(row: row, version: resolved.version) }
        let path = row.assetPath
        state.withLock { state in
            // The asset's kinds are all attached before any goes out: one decode serves them.
            defer { handOutWork(&state) }
            for work in missing {
                guard !state.shuttingDown else {
                    backlog.state.withLock { $0.inFlight[path]?.keeps = true }
                    return
                }
                let waiter = Waiter(id: state.jobs.makeID(), slot: nil, token: nil, priority: .batch) { [weak self] response in
                    self?.prerenderAnswered(path, response.result)
                }
                // Counted before the job can finish (a worker takes it once the lock is released).
                guard attach(waiter, key: work.key, resolved: resolved, kind: work.kind, scale: work.scale, encoder: work.encoder,
                             parks: false, in: &state) else {
                    backlog.state.withLock { $0.inFlight[path]?.incomplete = true }
                    return
                }
                backlog.state.withLock {
                    $0.inFlight[path]?.jobsLeft += 1
                    $0.jobsInFlight += 1
                }
            }
        }
        let finished = backlog.state.withLock { state -> Bool in
            state.inFlight[path]?.attaching = false
            return state.inFlight[path]?.jobsLeft == 0
        }
        if finished { settleInFlight(path) }
    }

    /// A backlog job is answered: its outcome counts towards its row's.
    private func prerenderAnswered(_ path: String, _ result: Result<CachedThumbnail, ThumbFailure>) {
        let finished = backlog.state.withLock { state -> Bool in
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
        kickBacklog()
    }

    private func settleInFlight(_ path: String) {
        guard let entry = backlog.state.withLock({ $0.inFlight.removeValue(forKey: path) }) else { return }
        if entry.keeps { return }
        // Not a failure: a job was refused (what was attached is cached now, the rest comes next
        // time), or the asset changed while it was pre-rendered (a change whose event was lost).
        let changed = !entry.failedTransiently && (try? assets.resolve(path))?.version != entry.version
        if (entry.incomplete || changed) && !entry.failedTransiently {
            _ = disk.retryBacklog(entry.row, countsAttempt: false)
            return
        }
        settle(entry.row, transient: entry.failedTransiently)
    }

    /// Done (or unnecessary): the row goes. A transient failure: to the back, or, after
    /// `maxAttempts`, given up with a log line.
    private func settle(_ row: DiskCache.BacklogRow, transient: Bool) {
        guard transient else {
            if disk.finishBacklog(row, maxRows: configuration.maxBacklogAssets) { backlog.state.withLock { $0.metrics.drained += 1 } }
            return
        }
        guard let moved = disk.retryBacklog(row, countsAttempt: true) else { return }
        guard moved.attempts >= BacklogDrain.maxAttempts else {
            backlog.state.withLock { $0.metrics.retried += 1 }
            return
        }
        guard disk.finishBacklog(moved, maxRows: configuration.maxBacklogAssets) else { return }
        let gaveUp = backlog.state.withLock { state -> Int in
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
