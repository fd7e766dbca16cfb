package import ThumbImaging
package import ThumbWorker

/// Everything a pipeline needs to run. Budgets in bytes, durations in seconds.
package struct PipelineConfiguration: Sendable {
    /// The asset folder; only regular files under it are ever read.
    package var assetRoot: String
    /// Where thumbnails and the index live.
    package var cacheDirectory: String
    package var memoryCacheBytes: Int = 64 << 20
    package var diskCacheBytes: Int = 2 << 30
    /// Render threads (default: one per core).
    package var workers: Int = max(1, System.processorCount)
    /// Jobs waiting for a worker; past this a new job is refused `overloaded`.
    package var maxQueuedJobs: Int = 4096
    /// Slots remembered at once; past it the least recently used unpinned slot is trimmed (its
    /// token kept until its idle time is up).
    package var maxSlots: Int = 100_000
    /// Bytes the slot table may hold (ids plus a per-entry overhead, see `SlotID.tableBytes`):
    /// 100,000 slots with ids of up to about 140 bytes, or fewer with longer ones.
    package var maxSlotTableBytes: Int = 32 << 20
    /// A slot with no live request is forgotten after this long, token and all.
    package var slotIdleSeconds: Double = 600
    package var limits = ImageLimits()
    package var encoder = EncoderSettings()
    /// Per kind: the format a request that names none gets, and the ones it may name.
    package var outputFormats = OutputFormatPolicy()
    package var tuning = ShrinkPlan.Tuning()
    /// Kinds (and scales) pre-rendered when an asset appears or changes.
    package var pregenerated: [(kind: SlotKind, scale: Int)] = []
    /// Kinds (and scales) whose crops attention places (`crop` attention, or focus without one):
    /// a background decode (a pre-render, a batch job) places every shape of these its
    /// version has no place for yet, so that no client's first request of them reads the whole
    /// frame to place it (`GroupRender.decodeOrder`).
    package var attentionPlaced: [(kind: SlotKind, scale: Int)] = []
    /// Fling debounce, seconds: a request that takes over a cell whose previous request was
    /// still pending (the cell was reused before its image arrived: the list is flinging)
    /// waits this long before it may start, so a cell that is reused again meanwhile costs
    /// nothing. Requests on settled cells start at once. Default: one 60 Hz frame. 0 turns it off.
    package var flingDebounceSeconds: Double = 0.017
    /// Off only to measure what cancellation saves (the scroll benchmark's baseline).
    package var cancelsAbandonedWork = true
    /// Where cache and watcher episodes are reported (once each), and each render when
    /// `logsRenders` (never a hit).
    package var log = PipelineLog.standardError
    /// Each finished render (not a hit, not a cancelled one) is an info event with its asset,
    /// kind, waiting clients and outcome (`LogFields`): the daemon's journal entries.
    package var logsRenders = false
    /// How often the watcher looks for an asset root that went away, seconds.
    package var rootPollSeconds: Double = 2
    /// The render worker processes that decode (one per render thread), sandboxed; nil decodes
    /// in the render threads themselves (`sandbox: false`, or a library user's choice).
    package var worker: WorkerLaunch?
    /// Longest one render may take, seconds; past it the worker is killed and the file remembered.
    package var renderSeconds: Double = 60
    /// Assets the pre-render backlog (in the cache index) may hold; past it new ones are refused,
    /// logged and counted (they are rendered when asked for, and the next reconcile queues them).
    package var maxBacklogAssets: Int = 4_000_000
    /// Holds the background reconcile until released (tests; nil: it starts at once).
    package var reconcileGate: ReconcileGate?
    /// Asked before a request of an owned caller (`PipelineRequest.owner`) starts a render: the
    /// fair shares between callers (nil: every render is admitted).
    package var renderAdmission: (any RenderAdmission)?

    package init(assetRoot: String, cacheDirectory: String) {
        self.assetRoot = assetRoot
        self.cacheDirectory = cacheDirectory
    }
}

package enum System {
    package static var processorCount: Int {
        #if canImport(Glibc)
        return Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        #else
        return 1
        #endif
    }
}

#if canImport(Glibc)
import Glibc
#endif
