import Synchronization

/// Restarts of render workers by reason, shared by every supervisor of a pool and read by the
/// metrics (any thread).
package final class WorkerRestartCounters: Sendable {
    /// A consistent copy of the counters.
    package struct Snapshot: Sendable, Equatable {
        package var restarts: [WorkerRestartReason: Int] = [:]
        /// Workers started (successful spawns, hello received).
        package var spawns = 0

        package func count(_ reason: WorkerRestartReason) -> Int { restarts[reason] ?? 0 }
        package var totalRestarts: Int { restarts.values.reduce(0, +) }
    }

    private let state = Mutex(Snapshot())

    package init() {}

    package func snapshot() -> Snapshot { state.withLock { $0 } }

    func record(_ reason: WorkerRestartReason) { state.withLock { $0.restarts[reason, default: 0] += 1 } }

    func recordSpawn() { state.withLock { $0.spawns += 1 } }
}
