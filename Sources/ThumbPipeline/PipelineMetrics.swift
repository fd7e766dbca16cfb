package import ThumbWorker
package import ThumbImaging

/// Counters of a running pipeline (monotonic unless noted), for `/metrics` and the benchmarks.
package struct PipelineMetrics: Sendable, Equatable {
    package var requests = 0
    package var memoryHits = 0
    package var diskHits = 0
    package var misses = 0
    package var coalesced = 0
    package var superseded = 0
    package var cancelled = 0
    package var overloaded = 0
    /// Misses refused because their caller's share of renders was used up (`RenderAdmission`).
    package var refusedByShare = 0
    package var failures = 0
    /// `failures` by the failure's code (`FailureDisposition.code`: undecodable, tooLarge, …).
    package var failuresByCode: [String: Int] = [:]
    package var negativeHits = 0
    package var watcherEvents = 0
    package var renders = 0
    /// Decodes (one per group of jobs) by what the source was.
    package var decodesBySourceFormat: [SourceFormat: Int] = [:]
    /// Jobs held back by the fling debounce.
    package var parkedJobs = 0
    /// Jobs dropped from the queue before they started (no waiter left).
    package var droppedJobs = 0
    /// Renders stopped at a checkpoint.
    package var abortedRenders = 0
    /// Thread CPU seconds spent rendering.
    package var renderCPUSeconds = 0.0
    /// Thread CPU seconds spent on renders whose every waiter had left, and how many.
    package var wastedCPUSeconds = 0.0
    package var wastedRenders = 0
    /// Wall seconds from a running job's cancellation to its decode stopping (the checkpoint
    /// latency; a render that finished first is not charged its cache write): count, sum, worst.
    package var cancelLatencyCount = 0
    package var cancelLatencySecondsSum = 0.0
    package var cancelLatencySecondsMax = 0.0
    /// Wall seconds of each render, for a histogram.
    package var renderSecondsBuckets = [Int](repeating: 0, count: PipelineMetrics.renderBucketBounds.count + 1)
    package var renderSecondsSum = 0.0
    /// Gauges.
    package var queuedJobs: [Priority: Int] = [:]
    package var runningJobs = 0
    package var liveSlots = 0
    /// Render worker processes started, and restarted by reason (empty when not sandboxed).
    package var workers: WorkerRestartCounters.Snapshot?
    /// Slots forgotten after `slotIdleSeconds` idle, and trimmed at the slot table's bounds
    /// before that (their tokens kept: `rememberedSlotTokens`, a gauge).
    package var expiredSlots = 0
    package var trimmedSlots = 0
    package var rememberedSlotTokens = 0
    /// The pre-render backlog (rows waiting, in flight, drained…).
    package var backlog = BacklogMetrics()
    /// The background reconciles of start-up.
    package var startup = StartupProgress()
    /// Folder watcher coverage (gauges): folders with a live watch, folders the kernel's watch
    /// limit left without one (covered by periodic rescans).
    package var watchedFolders = 0
    package var unwatchedFolders = 0
    /// Watches refused by the kernel's limit, retries included, and rescans of unwatched folders.
    package var watchFailures = 0
    package var missedFolderRescans = 0
    /// Overflows of the folder watcher's inotify queue (events lost, the root rescanned).
    package var watcherQueueOverflows = 0

    /// Memory hits answered from a version the folder watcher vouches for (no syscall), and
    /// requests that resolved their asset (open, `openat2`, `fstat`); the gauge: assets vouched for.
    package var vouchedHits = 0
    /// Placeholders computed by decodes and stored; look-ups answered from the index, or pending.
    package var placeholdersComputed = 0
    package var placeholderHits = 0
    package var placeholderPending = 0
    package var assetResolves = 0
    package var vouchedAssets = 0

    package static let renderBucketBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    mutating func recordRender(seconds: Double) {
        renderSecondsSum += seconds
        let bucket = Self.renderBucketBounds.firstIndex { seconds <= $0 } ?? Self.renderBucketBounds.count
        renderSecondsBuckets[bucket] += 1
    }
}
