#if canImport(Glibc)
import Glibc
#endif
import Synchronization
package import ThumbImaging
package import ThumbSystem

/// Keeps one render worker going for one render thread: spawns it on first use (or at `start`),
/// respawns it after a death or timeout, with a backoff while deaths keep coming without a
/// successful render between them (`WorkerBackoff`), and counts every restart by reason. Used by one thread; `cancelCurrent` and `currentPID` from any.
package final class RenderWorkerSupervisor: @unchecked Sendable {
    package let launch: WorkerLaunch
    package let counters: WorkerRestartCounters
    package let backoff: WorkerBackoff
    /// The live worker, behind a lock only so that `cancelCurrent` can reach it from another thread.
    private let current = Mutex<RenderWorker?>(nil)
    // Touched only by the render thread.
    private var deathsInARow = 0
    /// Stops at `shutdown` (the render thread's last act): no respawn after, and a respawn
    /// backoff under way ends at once. Not the pipeline's: while the pipeline stops, a render
    /// already handed out still gets its worker.
    private let lifecycle = Lifecycle()

    package init(launch: WorkerLaunch, counters: WorkerRestartCounters, backoff: WorkerBackoff = WorkerBackoff()) {
        self.launch = launch
        self.counters = counters
        self.backoff = backoff
    }

    deinit { shutdown() }

    /// The worker's pid, if one runs.
    package var currentPID: Int32? { current.withLock { $0?.pid } }

    /// The wait before the next spawn, seconds.
    package var backoffSeconds: Double { backoff.delaySeconds(afterDeathsInARow: deathsInARow) }

    /// Spawns the worker now if none runs (at startup, so the first request does not wait for it).
    package func start() throws(WorkerSpawnError) {
        _ = try worker()
    }

    /// Renders in the worker (see `RenderWorker.render`), spawning or respawning it first. A
    /// worker found dead before it got the order (it died idle) is replaced and the order sent
    /// again once: only a worker that held the request counts against the file.
    package func render(source descriptor: Int32, status: FileStatus, label: String, requests: [ThumbnailRequest],
                        limits: ImageLimits, tuning: ShrinkPlan.Tuning, deadlineSeconds: Double, placeholder: PlaceholderDemand = .skip,
                        isCancelled: (@Sendable () -> Bool)? = nil) -> WorkerOutcome {
        for attempt in 0..<2 {
            let worker: RenderWorker
            do throws(WorkerSpawnError) {
                worker = try self.worker()
            } catch {
                return .unavailable(error)
            }
            let outcome = worker.render(source: descriptor, status: status, label: label, requests: requests, limits: limits,
                                        tuning: tuning, deadlineSeconds: deadlineSeconds, placeholder: placeholder,
                                        isCancelled: isCancelled)
            if worker.isAlive { worker.relayStderr() }
            switch outcome {
            case .rendered:
                deathsInARow = 0
                return outcome
            case .crashed(let death):
                buried(death.restartReason)
                if !death.heldTheRequest && attempt == 0 { continue }
                return outcome
            case .timedOut:
                buried(.timedOut)
                return outcome
            case .unavailable:
                return outcome
            }
        }
        return .unavailable(WorkerSpawnError(reason: "the worker died twice before it could be sent the order"))
    }

    /// Cancels the running render, if any (from any thread).
    package func cancelCurrent() {
        let worker = current.withLock { $0 }
        worker?.cancelCurrent()
    }

    /// Stops the worker (closes its socket, kills and reaps it); no respawn after this.
    package func shutdown() {
        lifecycle.stop()
        let worker = current.withLock { worker in
            defer { worker = nil }
            return worker
        }
        worker?.shutdown()
    }

    /// The live worker, spawned after the backoff if there is none.
    private func worker() throws(WorkerSpawnError) -> RenderWorker {
        if let live = current.withLock({ $0 }), live.isAlive { return live }
        let shutDown = WorkerSpawnError(reason: "the supervisor was shut down")
        guard !lifecycle.isStopping else { throw shutDown }
        if backoffSeconds > 0, lifecycle.waitForStop(timeoutSeconds: backoffSeconds) { throw shutDown }
        do throws(WorkerSpawnError) {
            let worker = try RenderWorker.spawn(launch)
            counters.recordSpawn()
            current.withLock { $0 = worker }
            return worker
        } catch {
            buried(.spawnFailed)
            throw error
        }
    }

    /// Records a worker's end and forgets it.
    private func buried(_ reason: WorkerRestartReason) {
        counters.record(reason)
        deathsInARow += 1
        current.withLock { $0 = nil }
    }
}

/// How long a supervisor waits before respawning, while deaths keep coming: nothing after the
/// first (one bad file should cost one request, not a pause), then `firstDelaySeconds` doubling
/// up to `maxDelaySeconds`, so that a file or a fault that kills every worker cannot make the
/// pool spin on spawning. A successful render starts the count again.
package struct WorkerBackoff: Sendable, Equatable {
    package var firstDelaySeconds: Double
    package var maxDelaySeconds: Double

    package init(firstDelaySeconds: Double = 0.010, maxDelaySeconds: Double = 1) {
        self.firstDelaySeconds = firstDelaySeconds
        self.maxDelaySeconds = maxDelaySeconds
    }

    package func delaySeconds(afterDeathsInARow deaths: Int) -> Double {
        guard deaths >= 2 else { return 0 }
        let doublings = min(deaths - 2, 30)
        return max(0, min(maxDelaySeconds, firstDelaySeconds * Double(1 << doublings)))
    }
}
