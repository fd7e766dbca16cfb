import Synchronization
import ThumbImaging
package import ThumbPipeline
package import ThumbSystem

/// A spool folder's consumer, the same for `thumbd batch --spool` (one pass: `drainOnce`) and
/// the daemon's `"spool"` (a thread that follows the folder: `startFollowing`): claims left by
/// a process that died are taken up first, then every job in `incoming/` is rendered through
/// the pipeline at batch priority, so visible requests go first.
///
/// `@unchecked Sendable`: the runner (not Sendable) is used by one thread only, the follower's,
/// or the caller of `drainOnce` when nothing follows.
package final class SpoolConsumer: @unchecked Sendable {
    package let folder: SpoolFolder
    let runner: BatchRunner
    let log: PipelineLog
    /// How often an idle follower lists `incoming/` without being rung: a safety net for an event
    /// lost to an overflowed inotify queue; without a doorbell (no inotify) it is 1 s.
    static let rescanMilliseconds: Int32 = 30_000

    /// A child of the owner's (the daemon's): stops at `stop()` or with the owner; its stop
    /// rings the doorbell, so that the follower's wait ends at once.
    private let lifecycle: Lifecycle
    /// The follower's thread, joined by `stop`.
    private let thread = Mutex<LongLivedThread?>(nil)

    package init(folder: SpoolFolder, runner: BatchRunner, log: PipelineLog, lifecycle: Lifecycle = Lifecycle()) {
        self.folder = folder
        self.runner = runner
        self.log = log
        self.lifecycle = lifecycle.child()
    }

    /// What one pass did: the runner's summary, and the jobs the renderer died on too often
    /// (moved to `failed/` by the take-up).
    package struct Pass: Sendable {
        package var summary: BatchRunner.Summary
        package var gaveUp: [String]
        package var recovered: Int
    }

    /// Takes up dead processes' claims, then renders every job in `incoming/` (while `keepGoing`).
    package func drainOnce(keepGoing: @escaping () -> Bool = { true }) -> Pass {
        let recovery = folder.recoverClaims()
        if recovery.recovered > 0 { log.notice("spool: took up \(recovery.recovered) job(s) claimed by a process that died") }
        for name in recovery.gaveUp {
            log.warning("spool: \(DisplayText.truncated(name)) moved to failed/: the renderer died on it \(SpoolFolder.maxTakeOvers + 1) times")
        }
        return Pass(summary: folder.drain(with: runner, keepGoing: keepGoing), gaveUp: recovery.gaveUp, recovered: recovery.recovered)
    }

    /// Follows the folder on a thread of its own: a pass, then a wait until a job lands (the
    /// doorbell), again and again until `stop`.
    package func startFollowing() throws(SystemError) {
        // Armed before the first pass, so that a job landing during it rings the first wait.
        let bell: SpoolDoorbell?
        do { bell = try SpoolDoorbell(folder: folder) } catch {
            log.warning("spool \(folder.root): cannot watch incoming/ (\(error)); looking every second instead")
            bell = nil
        }
        // Rung at once when the stop came first (the bell stays rung: the first wait ends).
        if let bell { lifecycle.onStop { bell.ring() } }
        let started = try LongLivedThread.start(name: "thumbd-spool") { [self] in follow(bell) }
        thread.withLock { $0 = started }
    }

    /// Stops after the job in hand (its thumbnails answered, possibly 503 at shutdown) and
    /// waits for the thread.
    package func stop() {
        lifecycle.stop()
        thread.withLock { $0 }?.join()
    }

    private var isStopping: Bool { lifecycle.isStopping }

    private func follow(_ bell: SpoolDoorbell?) {
        while !isStopping {
            let pass = drainOnce { [self] in !isStopping }
            let summary = pass.summary
            if summary.total > 0 {
                log.info("spool: rendered \(summary.rendered), up to date \(summary.upToDate), failed \(summary.failures.count)")
            }
            if let bell {
                bell.wait(timeoutMilliseconds: Self.rescanMilliseconds)
            } else {
                // No inotify: look again in a second, or at once when stopped.
                _ = lifecycle.waitForStop(timeoutSeconds: 1)
            }
        }
    }
}
