import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging

/// One unit of render work, shared by every request that wants the same key (coalescing).
/// Its waiters and priority live in the job table (under the pipeline's lock); only the cancel
/// flag is read from the worker without the lock, at the decoder's checkpoints.
final class RenderJob: Sendable {
    let key: CacheKey
    let asset: AssetVersion
    let absolutePath: String
    let request: ThumbnailRequest
    /// Distinguishes this job from a later one with the same key.
    let generation: UInt64
    private let cancelFlag = Atomic<Bool>(false)
    /// When `cancel` was called, nanoseconds on the monotonic clock (0: not cancelled).
    private let cancelledAt = Atomic<UInt64>(0)
    /// When the decode stopped (the worker's answer arrived, the in-process render returned),
    /// nanoseconds on the monotonic clock (0: not yet).
    private let stoppedAt = Atomic<UInt64>(0)
    /// Run at `cancel` while a worker process renders the job (it passes the cancel on), under
    /// its own lock so that once it is cleared no late cancel can reach the worker's next render.
    private let cancelAction = Mutex<(@Sendable () -> Void)?>(nil)
    /// Someone wants the version's placeholder from this job's decode whatever it costs
    /// (`JobRecord.placeholderWanted`, mirrored here so that the render thread reads it
    /// without the pipeline's lock, even when it was asked after the job started).
    private let placeholderWantedFlag = Atomic<Bool>(false)

    init(key: CacheKey, asset: AssetVersion, absolutePath: String, request: ThumbnailRequest, generation: UInt64) {
        self.key = key
        self.asset = asset
        self.absolutePath = absolutePath
        self.request = request
        self.generation = generation
    }

    var isCancelled: Bool { cancelFlag.load(ordering: .sequentiallyConsistent) }

    var placeholderWanted: Bool { placeholderWantedFlag.load(ordering: .acquiring) }
    func wantPlaceholder() {
        placeholderWantedFlag.store(true, ordering: .releasing)
    }

    func cancel() {
        cancelledAt.store(Self.monotonicNanoseconds(), ordering: .relaxed)
        cancelFlag.store(true, ordering: .sequentiallyConsistent)
        cancelAction.withLock { $0?() }
    }

    /// Sets (or clears, with nil) what `cancel` also does; run at once if already cancelled.
    func whenCancelled(_ action: (@Sendable () -> Void)?) {
        cancelAction.withLock { current in
            current = action
            if isCancelled { action?() }
        }
    }

    /// Called once the decode is over, before its thumbnails are stored: what a cancel costs is
    /// the decode it could not stop, not the cache write of a render that finished first.
    func noteDecodeStopped() {
        stoppedAt.store(Self.monotonicNanoseconds(), ordering: .relaxed)
    }

    /// Seconds from `cancel` until the decode stopped (`noteDecodeStopped`, else now), or nil if
    /// the job was not cancelled. A cancel that came after the decode stopped counts as 0.
    var cancelLatencySeconds: Double? {
        let at = cancelledAt.load(ordering: .relaxed)
        guard at != 0 else { return nil }
        let stopped = stoppedAt.load(ordering: .relaxed)
        let end = stopped == 0 ? Self.monotonicNanoseconds() : stopped
        return end > at ? Double(end - at) / 1e9 : 0
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// A request waiting on a job.
struct Waiter {
    let id: UInt64
    let slot: SlotID?
    let token: UInt64?
    /// The slot claim the request holds (`SlotTable.Claim`): what the delivery gate compares,
    /// since tokens alone can be equal (a saturated token, a client resending its own).
    var claim: UInt64? = nil
    let priority: Priority
    /// nil for fire-and-forget work (pre-rendering, batch): it keeps the job alive but is told nothing.
    let completion: (@Sendable (PipelineResponse) -> Void)?
    /// The job's decode computes the version's placeholder at any cost (`PipelineRequest.wantsPlaceholder`).
    var wantsPlaceholder = false
    /// The caller whose share of the renderers the job uses (`PipelineRequest.owner`); nil: not rationed.
    var owner: String? = nil
}

/// Names one waiter of one job, for the tables that point at waiters without owning them
/// (a slot's live request, a prefetch group).
struct WaiterRef: Hashable {
    let digest: String
    let waiterID: UInt64
}

/// The locked part of a job.
struct JobRecord {
    enum Phase { case queued, running }

    let job: RenderJob
    var waiters: [UInt64: Waiter] = [:]
    var phase = Phase.queued
    var priority: Priority
    /// Queued but held back by the fling debounce (not in the queue yet).
    var parked = false
    /// Someone wants the version's placeholder from this decode whatever it costs: a waiter
    /// (`Waiter.wantsPlaceholder`) or a placeholder look-up that found the job on its way.
    var placeholderWanted = false

    /// The rationed callers waiting (`Waiter.owner`).
    var owners: Set<String> { Set(waiters.values.compactMap(\.owner)) }

    /// The highest priority among the waiters (a job runs as urgently as its most urgent waiter).
    var waitersPriority: Priority? { waiters.values.map(\.priority).max() }
}
