import ThumbImaging

/// The pipeline as the pre-render backlog's scheduler (`PrerenderBacklog` is the drain).
extension ThumbnailPipeline: PrerenderScheduling {
    var batchQueueRoom: Int {
        state.withLock { $0.shuttingDown ? 0 : $0.jobs.queueLimit(for: .batch) - $0.jobs.queuedJobs }
    }

    func attachPrerenders(_ work: [PrerenderBacklog.Work], of resolved: (absolutePath: String, version: AssetVersion),
                          attached: () -> Void, answered: @escaping @Sendable (Result<CachedThumbnail, ThumbFailure>) -> Void)
        -> PrerenderBacklog.Attachment {
        state.withLock { state in
            // The asset's kinds are all attached before any goes out: one decode serves them.
            defer { handOutWork(&state) }
            for work in work {
                guard !state.shuttingDown else { return .shuttingDown }
                let waiter = Waiter(id: state.jobs.makeID(), slot: nil, token: nil, priority: .batch) { answered($0.result) }
                guard attach(waiter, key: work.key, resolved: resolved, kind: work.kind, scale: work.scale, encoder: work.encoder,
                             parks: false, in: &state) else { return .refused }
                // Counted before the job can finish (a render thread takes it once the lock is released).
                attached()
            }
            return .all
        }
    }

    /// Queues the pre-renders of these assets in the backlog (nothing when no kind is
    /// pre-rendered). `changed`: new versions (a row already there moves to the back); false for
    /// a reconcile's finds (one already there stays where it is).
    func enqueuePrerenders(_ paths: [String], changed: Bool = true) {
        backlog.enqueue(paths, changed: changed, scheduler: self)
    }

    /// A render finished or rows were added: the backlog may send more (cheap when it runs already).
    func kickBacklog() {
        backlog.kick(self)
    }
}
