import Synchronization

/// The house's one stop signal. A part that works in the background observes a lifecycle
/// instead of keeping a stop flag of its own: it reads `isStopping` between steps, and when it
/// waits on something else (a poll, a condition) it registers a waker (`onStop`) so that the stop
/// reaches it at once.
///
/// Lifecycles form a tree: a part's own lifecycle is a `child()` of its owner's. Stopping the
/// daemon's stops every part; stopping a part's (the pipeline's `shutdown`, a test's watcher)
/// stops it and what it owns, never its owner. What a part does once stopping (answer what it
/// holds, join its thread, close a file) stays its own `stop()`: the lifecycle says *that*
/// stopping has begun, the owner's stop sequence says in which order parts finish.
///
/// Stopping happens once. Wakers run on the thread that stops, outside the lifecycle's lock,
/// children's stops included, in the order they were registered; a waker must not block (it
/// rings a poll, signals a condition, stops a child).
package final class Lifecycle: Sendable {
    private struct Observers {
        var stopped = false
        var nextToken = 0
        var wakers: [(token: Int, wake: @Sendable () -> Void)] = []
    }

    private let stopping = Atomic<Bool>(false)
    private let observers = Mutex(Observers())
    /// The parent and this child's waker in it, withdrawn when the child goes away.
    private let parentLink = Mutex<(parent: Lifecycle, token: Int)?>(nil)

    /// A root: stopped only by its own `stop()`.
    package init() {}

    deinit {
        if let (parent, token) = parentLink.withLock({ $0 }) { parent.withdraw(token) }
    }

    /// True once `stop()` ran here or on an ancestor.
    package var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Begins stopping: `isStopping` turns true, then every waker runs once. True for the call
    /// that began it; later calls do nothing.
    @discardableResult
    package func stop() -> Bool {
        let wakers = observers.withLock { observers -> [@Sendable () -> Void]? in
            guard !observers.stopped else { return nil }
            observers.stopped = true
            // Released under the lock: whoever reads `isStopping` true after a waker ran, or
            // registers too late, sees the stop.
            stopping.store(true, ordering: .releasing)
            defer { observers.wakers = [] }
            return observers.wakers.map(\.wake)
        }
        guard let wakers else { return false }
        for wake in wakers { wake() }
        return true
    }

    /// Runs `wake` once when stopping begins, or at once (on this thread) if it has. Returns a
    /// token for `withdraw`.
    @discardableResult
    package func onStop(_ wake: @escaping @Sendable () -> Void) -> Int {
        let token = observers.withLock { observers -> Int? in
            guard !observers.stopped else { return nil }
            observers.nextToken += 1
            observers.wakers.append((observers.nextToken, wake))
            return observers.nextToken
        }
        guard let token else {
            wake()
            return 0
        }
        return token
    }

    /// Forgets a waker (its part went away before the stop).
    package func withdraw(_ token: Int) {
        observers.withLock { $0.wakers.removeAll { $0.token == token } }
    }

    /// A lifecycle that stops with this one, or on its own `stop()` without stopping this one.
    package func child() -> Lifecycle {
        let child = Lifecycle()
        let token = onStop { [weak child] in child?.stop() }
        child.parentLink.withLock { $0 = (self, token) }
        return child
    }

    /// Waits until stopping begins or `timeoutSeconds` passed (a back-off that a stop cuts
    /// short). True when stopping.
    package func waitForStop(timeoutSeconds: Double) -> Bool {
        if isStopping { return true }
        let stopped = Condition(false)
        let token = onStop { stopped.update { $0 = true } }
        defer { withdraw(token) }
        return stopped.wait(until: { $0 }, timeoutSeconds: timeoutSeconds)
    }
}
