import Synchronization
import ThumbImaging
package import ThumbSystem
import ThumbWorker

/// The heart of thumbd: requests in, thumbnails out, with slot tokens that supersede stale
/// loads, coalescing of identical work, a bounded priority queue feeding render threads,
/// and a memory + disk cache.
///
/// `submit` runs on the caller's thread and never decodes: it resolves the path, looks in the
/// caches, and either answers at once or attaches the request to a job. Every submitted request
/// gets exactly one answer. The bookkeeping (`PipelineState`: the slot table, the job table)
/// sits under one lock, which only decides; answers are delivered after it is released, through
/// the `DeliveryGate`, which keeps "a superseded request is never answered with bytes".
package final class ThumbnailPipeline: Sendable {
    package let configuration: PipelineConfiguration
    let assets: AssetRoot
    let memory: MemoryCache
    /// The cache folder: its index and the stores on it.
    let stores: CacheStores
    let state: PipelineLock
    let gate = DeliveryGate()
    let renderThreads = RenderThreads()
    /// Signalled after every hold that took jobs out of the queue: `waitForQueueRoom` waits on it.
    let queueTaken = Condition(())
    /// Render thread `index`'s renderer (`ThumbnailRendering`): sandboxed or in process, or a test's.
    let makeRenderer: @Sendable (Int) -> any ThumbnailRendering
    /// Open, render, store: what every render thread does with a group.
    let groupRender: GroupRender
    /// Worker process restarts by reason, every render thread's (for `/metrics`).
    let workerCounters = WorkerRestartCounters()
    /// The background reconciles of start-up (and of rescans).
    let startup: PipelineStartup
    /// The pre-render backlog's drain.
    let backlog: PrerenderBacklog
    /// Called when a request has resolved its asset and looked in the caches, before it keeps
    /// a disk hit in memory and vouches for the version found (tests let an event come between).
    let resolvedHook: (@Sendable (AssetVersion) -> Void)?
    /// The asset folder's follower: watcher events, removals, reconciles, vouching.
    let follower: AssetFollower
    /// Assets' focal points, and the keys that carry them.
    package let focus: AssetFocus
    /// Placeholders: the look-up a screen of cells asks for.
    package let placeholders: AssetPlaceholders
    /// Stops when `shutdown` begins or with the owner's (the daemon's, at SIGTERM): the
    /// background reconciles, the backlog's drain, the folder watcher, the API's 503s and the
    /// lock-free hits observe it.
    package let lifecycle: Lifecycle
    /// Vouched memory hits of requests without a slot, answered without the lock: each is a
    /// request, a memory hit and a vouched hit of `metrics`.
    let lockFreeHits = Atomic<Int>(0)

    /// `lifecycle`: the owner's; the pipeline's own is a child of it.
    package convenience init(configuration: PipelineConfiguration, lifecycle: Lifecycle = Lifecycle()) throws {
        try self.init(configuration: configuration, startsWorkers: true, lifecycle: lifecycle)
    }

    /// `startsWorkers: false` holds every job in the queue until `startWorkers()`: tests use it
    /// to line requests up deterministically. `renderers` and `opener` replace the render
    /// threads' renderers and the asset root's open (tests act mid-render with them);
    /// `substitutingStores` replaces stores of the cache folder (tests fail or observe them).
    init(configuration: PipelineConfiguration, startsWorkers: Bool,
         renderers: (@Sendable (Int) -> any ThumbnailRendering)? = nil,
         opener: ((AssetRoot) -> any AssetOpening)? = nil,
         substitutingStores: ((inout CacheStores) -> Void)? = nil,
         resolvedHook: (@Sendable (AssetVersion) -> Void)? = nil, lifecycle owner: Lifecycle = Lifecycle()) throws {
        self.resolvedHook = resolvedHook
        self.configuration = configuration
        let lifecycle = owner.child()
        self.lifecycle = lifecycle
        startup = PipelineStartup(gate: configuration.reconcileGate, lifecycle: lifecycle)
        memory = MemoryCache(byteBudget: configuration.memoryCacheBytes)
        // The cache first: its real path (created if need be) is what the asset root excludes.
        // Its files are reconciled with the index in the background: hits are served meanwhile.
        var stores = try CacheStores.open(directory: configuration.cacheDirectory, byteBudget: configuration.diskCacheBytes,
                                          log: configuration.log, reconcilesFiles: false)
        substitutingStores?(&stores)
        self.stores = stores
        assets = try AssetRoot(path: configuration.assetRoot, excluding: [stores.thumbnails.directory])
        state = PipelineLock(PipelineState(configuration: configuration))
        backlog = PrerenderBacklog(stores: stores, assets: assets, configuration: configuration, lifecycle: lifecycle)
        focus = AssetFocus(assets: assets, stores: stores, memory: memory)
        placeholders = AssetPlaceholders(assets: assets, stores: stores)
        follower = AssetFollower(assets: assets, stores: stores, memory: memory, configuration: configuration, backlog: backlog,
                                 startup: startup)
        makeRenderer = renderers ?? Self.defaultRenderer(configuration, counters: workerCounters)
        groupRender = GroupRender(opener: opener?(assets) ?? assets, stores: stores, memory: memory,
                                  attentionPlaced: configuration.attentionPlaced)
        follower.scheduler.bind(self)
        placeholders.pipeline.bind(self)
        if startsWorkers { try startWorkers() }
        reconcileCacheInBackground()
    }

    /// Submits a request; `completion` is called exactly once, on some thread (before `submit`
    /// returns for cache hits and refusals, from a worker otherwise). Returns the request's token
    /// when it names a slot.
    ///
    /// Completions run outside the pipeline's lock, so a completion may take its time and may
    /// call back into the pipeline (read `metrics`, submit or release; not `shutdown`, which waits
    /// for the workers). What such a call answers arrives once the calling completion returned.
    /// "Superseded means never answered with bytes" still holds for the caller: once `submit` of
    /// a newer request on a slot has returned, no older request of that slot is handed bytes (it
    /// is answered `superseded` instead; see `DeliveryGate` for how, and for the one nuance of
    /// calls made from inside a completion). Do not call `submit` while holding a lock that your
    /// completions take: `submit` may wait for a completion of its slot that is under way.
    @discardableResult
    package func submit(_ request: PipelineRequest,
                       completion: @escaping @Sendable (PipelineResponse) -> Void) -> UInt64? {
        prepare(request, completion: completion)
    }

    /// Async form of `submit`.
    package func thumbnail(_ request: PipelineRequest) async -> PipelineResponse {
        await withCheckedContinuation { continuation in
            submit(request) { continuation.resume(returning: $0) }
        }
    }

    /// The `prepareForReuse` moment: the slot's live request (if any) is answered `cancelled`
    /// and its work cancelled unless someone else still wants it. Once `release` has returned,
    /// no request of the slot made before it is handed bytes.
    package func release(_ slot: SlotID) {
        locked { state, answers in
            let (known, live) = state.slots.release(slot)
            guard known else { return }
            answers.claimed(slot)
            if let live, let removed = state.detach(live) {
                state.metrics.cancelled += 1
                answers.add(removed, .init(token: removed.token, result: .failure(.cancelled)))
            }
        }
    }

    /// The key of `kind` for this version, with the asset's focus when the kind's crop follows it
    /// (the key's `focus` then goes into the render's request: one look-up decides both).
    func cacheKey(asset: AssetVersion, kind: SlotKind, scale: Int, encoder: EncoderSettings) -> CacheKey {
        focus.cacheKey(asset: asset, kind: kind, scale: scale, encoder: encoder)
    }

    /// Drops every thumbnail of an asset (memory and disk) and its negative entry.
    package func invalidate(assetPath: String) {
        follower.invalidate(assetPath: assetPath)
    }

    package var metrics: PipelineMetrics {
        var metrics = state.withLock { state in
            var metrics = state.metrics
            metrics.queuedJobs = state.jobs.queuedJobsByPriority
            metrics.runningJobs = state.jobs.runningJobs
            metrics.liveSlots = state.slots.count
            metrics.expiredSlots = state.slots.expiredSlots
            metrics.trimmedSlots = state.slots.trimmedSlots
            metrics.rememberedSlotTokens = state.slots.tokenMemory.count
            metrics.workers = workerCounters.snapshot()
            let coverage = follower.coverage.snapshot
            metrics.watchedFolders = coverage.watchedFolders
            metrics.unwatchedFolders = coverage.unwatchedFolders
            metrics.watchFailures = coverage.watchFailures
            metrics.missedFolderRescans = coverage.missedFolderRescans
            metrics.watcherQueueOverflows = coverage.queueOverflows
            metrics.vouchedAssets = memory.vouchCount
            metrics.watcherEvents = follower.watcherEvents.load(ordering: .relaxed)
            (metrics.placeholderHits, metrics.placeholderPending) = placeholders.lookups.withLock { $0 }
            let lockFree = lockFreeHits.load(ordering: .relaxed)
            metrics.requests += lockFree
            metrics.memoryHits += lockFree
            metrics.vouchedHits += lockFree
            return metrics
        }
        metrics.backlog = backlog.metrics
        metrics.startup = startupProgress
        return metrics
    }

    package var cacheStatistics: (memory: (bytes: Int, entries: Int), disk: (bytes: Int, entries: Int)) {
        (memory.statistics, stores.thumbnails.statistics)
    }

    /// Stops taking work: the background reconciles stop, queued and new requests are answered
    /// `shuttingDown`, running renders finish (or stop at their next checkpoint when nobody
    /// waits), workers exit, the index closes.
    /// Not from a completion: it waits for the workers, whose thread that may be.
    package func shutdown() {
        // The background reconciles stop at their next batch; the backlog takes no more rows
        // (queued pre-renders are answered below and their rows stay for the next start).
        lifecycle.stop()
        waitForBackgroundReconcile()
        locked { state, answers in _ = state.shutDown(into: &answers) }
        renderThreads.stop()
        backlog.waitForPass()
        follower.endVouching()
        follower.flushRemovals()
        stores.index.close()
        // Idle by now (both looked at the lifecycle): their threads end.
        startup.worker.close(joining: true)
        backlog.worker.close(joining: true)
    }
}

extension ThumbnailPipeline {
    /// Runs `body` under the lock, then, once it is released, delivers the answers it decided.
    func locked<Result>(_ body: (inout PipelineState, inout Answers) -> Result) -> Result {
        var answers = Answers()
        let result = state.withLock { state in body(&state, &answers) }
        deliver(answers)
        return result
    }

    /// Delivers answers decided under the lock (the caller released it) through the gate.
    func deliver(_ answers: Answers) {
        gate.deliver(answers) { [self] slot, claim, token in
            state.withLock { $0.admitDelivery(to: slot, claim: claim, token: token) }
        }
    }
}
