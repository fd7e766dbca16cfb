import Synchronization

/// The pipeline's one lock, around `PipelineState`. It counts how often it is taken: a test
/// holds one miss to two holds (submit's, and the render thread's finish), which is what keeps
/// the lock off the request path's critical section as request rates grow.
final class PipelineLock: Sendable {
    private let mutex: Mutex<PipelineState>
    private let holds = Atomic<Int>(0)

    init(_ state: PipelineState) {
        mutex = Mutex(state)
    }

    /// Times the lock was taken since the pipeline began.
    var holdCount: Int { holds.load(ordering: .relaxed) }

    func withLock<Result>(_ body: (inout PipelineState) -> Result) -> Result {
        holds.add(1, ordering: .relaxed)
        var result: Result?
        mutex.withLock { state in result = body(&state) }
        return result!
    }
}
