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

    public convenience init(configuration: PipelineConfiguration) throws {
        try self.init(configuration: configuration, startsWorkers: true)
    }

    /// `startsWorkers: false` holds every job in the queue until `startWorkers()`: tests use it
    /// to line requests up deterministically.
    init(configuration: PipelineConfiguration, startsWorkers: Bool) throws {
        self.configuration = configuration
        assets = try AssetRoot(path: configuration.assetRoot, excluding: [configuration.cacheDirectory])
        memory = MemoryCache(byteBudget: configuration.memoryCacheBytes)
        disk = try DiskCache(directory: configuration.cacheDirectory, byteBudget: configuration.diskCacheBytes)
        thumbnailer = Thumbnailer(limits: configuration.limits, tuning: configuration.tuning)
        state = Mutex(PipelineState())
        if startsWorkers { startWorkers() }
    }

    /// Submits a request; `completion` is called exactly once, on some thread (at once for
    /// cache hits and refusals, from a worker otherwise). Returns the request's token when it
    /// names a slot.
    @discardableResult
    public func submit(_ request: PipelineRequest,
                       completion: @escaping @Sendable (PipelineResponse) -> Void) -> UInt64? {
        var answers = Answers()
        let token = prepare(request, completion: completion, answers: &answers)
        answers.deliver()
        return token
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
        var answers = Answers()
        state.withLock { state in
            guard let waiter = state.slots[slot]?.liveWaiter else { return }
            state.slots[slot]?.liveWaiter = nil
            if let removed = detach(waiter, in: &state) {
                state.metrics.cancelled += 1
                answers.add(removed, .init(token: removed.token, result: .failure(.cancelled)))
            }
        }
        answers.deliver()
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
        var answers = Answers()
        let workers = state.withLock { state -> Int in
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
        answers.deliver()
        for _ in 0..<workers { workAvailable.signal() }
        workersDone.wait()
        disk.close()
    }
}

/// Answers collected under the lock and delivered after it is released (a completion may
/// call back into the pipeline).
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
