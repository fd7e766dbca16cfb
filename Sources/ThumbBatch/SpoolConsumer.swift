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

    private struct Following {
        var stopping = false
        var doorbell: SpoolDoorbell?
        var thread: LongLivedThread?
    }
    private let following = Condition(Following())

    package init(folder: SpoolFolder, runner: BatchRunner, log: PipelineLog) {
        self.folder = folder
        self.runner = runner
        self.log = log
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
        let thread = try LongLivedThread.start(name: "thumbd-spool") { [self] in follow(bell) }
        let stoppedMeanwhile = following.update { following -> Bool in
            following.doorbell = bell
            following.thread = thread
            return following.stopping
        }
        if stoppedMeanwhile { bell?.ring() }
    }

    /// Stops after the job in hand (its thumbnails answered, possibly 503 at shutdown) and
    /// waits for the thread.
    package func stop() {
        let (bell, thread) = following.update { following in
            following.stopping = true
            return (following.doorbell, following.thread)
        }
        bell?.ring()
        thread?.join()
    }

    private var isStopping: Bool { following.withLock { $0.stopping } }

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
                following.wait(until: { $0.stopping }, timeoutSeconds: 1)
            }
        }
    }
}
