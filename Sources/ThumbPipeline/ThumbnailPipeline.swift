import Dispatch
import Synchronization
import ThumbImaging

/// The heart of thumbd: requests in, thumbnails out, with slot tokens that supersede stale
/// loads, coalescing of identical work, a bounded priority queue feeding render threads,
/// and a memory + disk cache.
///
/// `submit` runs on the caller's thread and never decodes: it resolves the path, looks in the
/// caches, and either answers at once or attaches the request to a job. Every submitted request
/// gets exactly one answer. All bookkeeping sits under one lock, so the rule "a superseded request
/// is never answered with bytes" is a matter of removing its waiter under that lock.
public final class ThumbnailPipeline: Sendable {
    public let configuration: PipelineConfiguration
    let assets: AssetRoot
    let memory: MemoryCache
    let disk: DiskCache
    let thumbnailer: Thumbnailer
    let state: Mutex<PipelineState>
    let workAvailable = DispatchSemaphore(value: 0)
    let workersDone = DispatchGroup()
    /// Called at every cancellation checkpoint of a render (tests use it to act mid-decode).
    let checkpointHook: (@Sendable () -> Void)?
    /// Called when a worker has opened a source, before it reads it (tests change the file there).
    let sourceOpenedHook: (@Sendable (AssetVersion) -> Void)?

    public convenience init(configuration: PipelineConfiguration) throws {
        try self.init(configuration: configuration, startsWorkers: true)
    }

    /// `startsWorkers: false` holds every job in the queue until `startWorkers()`: tests use it
    /// to line requests up deterministically.
    init(configuration: PipelineConfiguration, startsWorkers: Bool, checkpointHook: (@Sendable () -> Void)? = nil,
         sourceOpenedHook: (@Sendable (AssetVersion) -> Void)? = nil) throws {
        self.checkpointHook = checkpointHook
        self.sourceOpenedHook = sourceOpenedHook
        self.configuration = configuration
        memory = MemoryCache(byteBudget: configuration.memoryCacheBytes)
        // The cache first: its real path (created if need be) is what the asset root excludes.
        disk = try DiskCache(directory: configuration.cacheDirectory, byteBudget: configuration.diskCacheBytes, log: configuration.log)
        assets = try AssetRoot(path: configuration.assetRoot, excluding: [disk.directory])
        thumbnailer = Thumbnailer(limits: configuration.limits, tuning: configuration.tuning)
        state = Mutex(PipelineState())
        if startsWorkers { startWorkers() }
    }

    /// Submits a request; `completion` is called exactly once, on some thread (at once for
    /// cache hits and refusals, from a worker otherwise). Returns the request's token when it
    /// names a slot.
    ///
    /// Completions run while the pipeline's lock is held: that is what makes "superseded means
    /// never answered with bytes" hold for the caller too — once `submit` of a newer request on
    /// a slot returns, no older request of that slot can still be handed bytes. So a completion
    /// must be quick and must not call back into the pipeline (hand the answer to another
    /// thread, resume a continuation or a suspended connection).
    @discardableResult
    public func submit(_ request: PipelineRequest,
                       completion: @escaping @Sendable (PipelineResponse) -> Void) -> UInt64? {
        prepare(request, completion: completion)
    }

    /// Async form of `submit`.
    public func thumbnail(_ request: PipelineRequest) async -> PipelineResponse {
        await withCheckedContinuation { continuation in
            submit(request) { continuation.resume(returning: $0) }
        }
    }

    /// The `prepareForReuse` moment: the slot's live request (if any) is answered `cancelled`
    /// and its work cancelled unless someone else still wants it.
    public func release(_ slot: SlotID) {
        locked { state, answers in
            guard let waiter = state.slots[slot]?.liveWaiter else { return }
            state.slots[slot]?.liveWaiter = nil
            if let removed = detach(waiter, in: &state) {
                state.metrics.cancelled += 1
                answers.add(removed, .init(token: removed.token, result: .failure(.cancelled)))
            }
        }
    }

    /// Drops every thumbnail of an asset (memory and disk) and its negative entry.
    public func invalidate(assetPath: String) {
        memory.removeThumbnails(ofAsset: assetPath)
        disk.removeThumbnails(ofAsset: assetPath)
    }

    public var metrics: PipelineMetrics {
        state.withLock { state in
            var metrics = state.metrics
            metrics.queuedJobs = [:]
            for record in state.jobs.values where record.phase == .queued {
                metrics.queuedJobs[record.priority, default: 0] += 1
            }
            metrics.runningJobs = state.runningRenders
            metrics.liveSlots = state.slots.count
            return metrics
        }
    }

    public var cacheStatistics: (memory: (bytes: Int, entries: Int), disk: (bytes: Int, entries: Int)) {
        (memory.statistics, disk.statistics)
    }

    /// Stops taking work: queued and new requests are answered `shuttingDown`, running renders
    /// finish (or stop at their next checkpoint when nobody waits), workers exit, the index closes.
    public func shutdown() {
        let workers = locked { state, answers -> Int in
            guard !state.shuttingDown else { return 0 }
            state.shuttingDown = true
            for (digest, record) in state.jobs where record.phase == .queued {
                for waiter in record.waiters.values {
                    answers.add(waiter, .init(token: waiter.token, result: .failure(.shuttingDown)))
                    if let slot = waiter.slot, state.slots[slot]?.liveWaiter?.waiterID == waiter.id {
                        state.slots[slot]?.liveWaiter = nil
                    }
                }
                state.jobs[digest] = nil
            }
            return configuration.workers
        }
        for _ in 0..<workers { workAvailable.signal() }
        workersDone.wait()
        disk.close()
    }
}

extension ThumbnailPipeline {
    /// Runs `body` under the lock and delivers the answers it collected before releasing it.
    func locked<Result>(_ body: (inout PipelineState, inout Answers) -> Result) -> Result {
        state.withLock { state in
            var answers = Answers()
            let result = body(&state, &answers)
            answers.deliver()
            return result
        }
    }
}

/// Answers collected while deciding, delivered once the decisions are made.
struct Answers {
    private var pending: [(@Sendable (PipelineResponse) -> Void, PipelineResponse)] = []

    mutating func add(_ waiter: Waiter, _ response: PipelineResponse) {
        if let completion = waiter.completion { pending.append((completion, response)) }
    }

    mutating func add(_ completion: @escaping @Sendable (PipelineResponse) -> Void, _ response: PipelineResponse) {
        pending.append((completion, response))
    }

    func deliver() {
        for (completion, response) in pending { completion(response) }
    }
}
