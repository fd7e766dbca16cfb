package import ThumbWorker

/// The one mapping of a render worker's answers to the failure table: the daemon's renders and
/// `thumbd render --sandbox` both go through here.
extension ThumbFailure {
    /// One request's failure as the worker reported it; `path` names the asset.
    package init(_ failure: WorkerRenderFailure, path: String) {
        switch failure {
        case .imaging(let error): self = ThumbFailure(error)
        case .read(.tooLarge(let reason)): self = .tooLarge(reason: reason)
        case .read(.unreadable(let reason)), .read(.changed(let reason)): self = .unreadable(path: path, reason: reason)
        }
    }

    /// A render that got no answer from the worker: it died, ran past `renderSeconds` and was
    /// killed, or none could be started. Nil for an answer (its results are mapped one by one).
    package init?(_ outcome: WorkerOutcome, renderSeconds: Double) {
        switch outcome {
        case .rendered:
            return nil
        case .crashed(let death):
            self = .renderCrashed(reason: "render worker \(death)")
        case .timedOut(let seconds, _):
            self = .renderTimedOut(reason: "took longer than \(renderSeconds) s (limits.renderSeconds; "
                                   + "the worker was killed after \((seconds * 10).rounded() / 10) s)")
        case .unavailable(let error):
            self = .rendererUnavailable(reason: error.description)
        }
    }
}

extension WorkerOutcome {
    /// The CPU the worker spent on the render, whatever became of it.
    package var cpuSeconds: Double {
        switch self {
        case .rendered(let answer): answer.cpuSeconds
        case .crashed(let death): death.cpuSeconds
        case .timedOut(_, let cpuSeconds): cpuSeconds
        case .unavailable: 0
        }
    }
}
