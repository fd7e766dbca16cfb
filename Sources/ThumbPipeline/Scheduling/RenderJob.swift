import Synchronization
import ThumbImaging

/// One unit of render work, shared by every request that wants the same key (coalescing).
/// Its waiters and priority live in the pipeline's locked state; only the cancel flag is
/// read from the worker without the lock, at the decoder's checkpoints.
final class RenderJob: Sendable {
    let key: CacheKey
    let asset: AssetVersion
    let absolutePath: String
    let request: ThumbnailRequest
    /// Distinguishes this job from a later one with the same key.
    let generation: UInt64
    private let cancelFlag = Atomic<Bool>(false)

    init(key: CacheKey, asset: AssetVersion, absolutePath: String, request: ThumbnailRequest, generation: UInt64) {
        self.key = key
        self.asset = asset
        self.absolutePath = absolutePath
        self.request = request
        self.generation = generation
    }

    var isCancelled: Bool { cancelFlag.load(ordering: .relaxed) }
    func cancel() { cancelFlag.store(true, ordering: .relaxed) }
}

/// A request waiting on a job.
struct Waiter {
    let id: UInt64
    let slot: SlotID?
    let token: UInt64?
    let priority: Priority
    /// nil for fire-and-forget work (pre-rendering, batch): it keeps the job alive but is told nothing.
    let completion: (@Sendable (PipelineResponse) -> Void)?
}

/// The locked part of a job.
struct JobRecord {
    enum Phase { case queued, running }

    let job: RenderJob
    var waiters: [UInt64: Waiter] = [:]
    var phase = Phase.queued
    var priority: Priority

    /// The highest priority among the waiters (a job runs as urgently as its most urgent waiter).
    var waitersPriority: Priority? { waiters.values.map(\.priority).max() }
}
