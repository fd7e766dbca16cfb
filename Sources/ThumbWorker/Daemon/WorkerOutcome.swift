import ThumbImaging

/// What became of one render sent to a worker.
package enum WorkerOutcome: Sendable {
    /// The worker answered: one result per request, in order (every one a thumbnail, or every
    /// one the same failure of the shared decode), and the CPU it spent.
    case rendered(WorkerAnswer)
    /// The worker died, or was killed for a malformed answer, while it held the request.
    case crashed(WorkerDeath)
    /// The deadline passed: the worker was killed and reaped. `cpuSeconds`: what it had spent.
    case timedOut(seconds: Double, cpuSeconds: Double)
    /// No worker could be started (the supervisor's answer after a spawn failure).
    case unavailable(WorkerSpawnError)
}
