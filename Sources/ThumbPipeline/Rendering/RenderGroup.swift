import ThumbImaging

/// Jobs of one asset version that one decode serves (`JobTable.popGroup`), with what the decode
/// is to know of their waiters as they left the queue.
struct RenderGroup: Sendable {
    let jobs: [RenderJob]
    /// A client waits on one of them at `.visible`: the placeholder is computed only if the
    /// decode reads the whole frame anyway, unless someone asked for it (`RenderJob.placeholderWanted`).
    let clientWaits: Bool
    /// Every waiter is background work (`.batch`: pre-renders, batch jobs): the decode may also
    /// place the configured attention shapes (`GroupRender.unplacedShapes`). A prefetch has a
    /// client behind it that asked for this one thumbnail soon.
    var placesEveryShape = false

    var isCancelled: Bool { jobs.allSatisfy(\.isCancelled) }
}

/// A group a render thread is done with: one outcome per job, and what the render cost.
struct FinishedGroup {
    let group: RenderGroup
    let outcomes: [Result<CachedThumbnail, ThumbFailure>]
    /// The render thread's CPU and the worker's, shared evenly among the jobs.
    let cpuSecondsEach: Double
    let wallSeconds: Double
    /// The decode computed the version's placeholder (it is in the index now).
    let computedPlaceholder: Bool
    /// What the decode found the source to be.
    let sourceFormat: SourceFormat?
}
