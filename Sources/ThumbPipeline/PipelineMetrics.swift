import ThumbWorker

/// Counters of a running pipeline (monotonic unless noted), for `/metrics` and the benchmarks.
public struct PipelineMetrics: Sendable, Equatable {
    public var requests = 0
    public var memoryHits = 0
    public var diskHits = 0
    public var misses = 0
    public var coalesced = 0
    public var superseded = 0
    public var cancelled = 0
    public var overloaded = 0
    /// Misses refused because their caller's share of renders was used up (`RenderAdmission`).
    package var refusedByShare = 0
    public var failures = 0
    /// `failures` by the failure's code (`FailureDisposition.code`: undecodable, tooLarge, …).
    public var failuresByCode: [String: Int] = [:]
    public var negativeHits = 0
    public var watcherEvents = 0
    public var renders = 0
    /// Jobs held back by the fling debounce.
    public var parkedJobs = 0
    /// Jobs dropped from the queue before they started (no waiter left).
    public var droppedJobs = 0
    /// Renders stopped at a checkpoint.
    public var abortedRenders = 0
    /// Thread CPU seconds spent rendering.
    public var renderCPUSeconds = 0.0
    /// Thread CPU seconds spent on renders whose every waiter had left, and how many.
    public var wastedCPUSeconds = 0.0
    public var wastedRenders = 0
    /// Wall seconds from a running job's cancellation to its decode stopping (the checkpoint
    /// latency; a render that finished first is not charged its cache write): count, sum, worst.
    public var cancelLatencyCount = 0
    public var cancelLatencySecondsSum = 0.0
    public var cancelLatencySecondsMax = 0.0
    /// Wall seconds of each render, for a histogram.
    public var renderSecondsBuckets = [Int](repeating: 0, count: PipelineMetrics.renderBucketBounds.count + 1)
    public var renderSecondsSum = 0.0
    /// Gauges.
    public var queuedJobs: [Priority: Int] = [:]
    public var runningJobs = 0
    public var liveSlots = 0
    /// Render worker processes started, and restarted by reason (empty when not sandboxed).
    public var workers: WorkerRestartCounters.Snapshot?
    /// Slots forgotten after `slotIdleSeconds` idle, and trimmed at the slot table's bounds
    /// before that (their tokens kept: `rememberedSlotTokens`, a gauge).
    public var expiredSlots = 0
    public var trimmedSlots = 0
    public var rememberedSlotTokens = 0
    /// The pre-render backlog (rows waiting, in flight, drained…).
    public var backlog = BacklogMetrics()
    /// The background reconciles of start-up.
    public var startup = StartupProgress()
    /// Folder watcher coverage (gauges): folders with a live watch, folders the kernel's watch
    /// limit left without one (covered by periodic rescans).
    public var watchedFolders = 0
    public var unwatchedFolders = 0
    /// Watches refused by the kernel's limit, retries included, and rescans of unwatched folders.
    public var watchFailures = 0
    public var missedFolderRescans = 0
    /// Overflows of the folder watcher's inotify queue (events lost, the root rescanned).
    public var watcherQueueOverflows = 0

    /// Memory hits answered from a version the folder watcher vouches for (no syscall), and
    /// requests that resolved their asset (open, `openat2`, `fstat`); the gauge: assets vouched for.
    public var vouchedHits = 0
    /// Placeholders computed by decodes and stored; look-ups answered from the index, or pending.
    public var placeholdersComputed = 0
    public var placeholderHits = 0
    public var placeholderPending = 0
    public var assetResolves = 0
    public var vouchedAssets = 0

    public static let renderBucketBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    mutating func recordRender(seconds: Double) {
        renderSecondsSum += seconds
        let bucket = Self.renderBucketBounds.firstIndex { seconds <= $0 } ?? Self.renderBucketBounds.count
        renderSecondsBuckets[bucket] += 1
    }
}
