import Synchronization

/// How a part of the pipeline reaches the pipeline it serves by an ability (`PrerenderScheduling`,
/// `PlaceholderRendering`): the part is made in the pipeline's `init`, before the pipeline
/// exists, so the pipeline binds itself once it is whole. Weak: the pipeline owns its parts.
final class PipelineBinding<Ability>: Sendable {
    private struct Box: @unchecked Sendable {
        // Only ever a Sendable pipeline (the abilities are Sendable protocols).
        weak var object: AnyObject?
    }
    private let box = Mutex(Box())

    func bind(_ ability: Ability) {
        box.withLock { $0.object = ability as AnyObject }
    }

    /// The pipeline, while it lives.
    var ability: Ability? { box.withLock { $0.object } as? Ability }
}
