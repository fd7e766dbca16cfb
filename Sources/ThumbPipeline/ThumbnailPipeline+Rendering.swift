#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
package import ThumbSystem
import ThumbWorker

/// The pipeline as the render threads' feed: a thread renders a group outside every lock, then
/// in one hold of the lock its jobs' waiters are answered (the first bytes for a slot checked by
/// the delivery gate in that same hold, `DeliveryGate.admitEarly`) and its next group taken.
/// With `submit`'s own hold, which hands a new job straight to an idle thread, one miss takes
/// the pipeline's lock twice.
extension ThumbnailPipeline: RenderFeed {
    /// Starts the render threads (`startsWorkers: false` leaves that to the test).
    package func startWorkers() throws(SystemError) {
        let renderers = (0..<max(1, configuration.workers)).map { makeRenderer($0) }
        try renderThreads.start(renderers, feed: self, log: configuration.log)
    }

    /// The renderer of render thread `index`: its own worker process when sandboxed.
    static func defaultRenderer(_ configuration: PipelineConfiguration, counters: WorkerRestartCounters) -> @Sendable (Int) -> any ThumbnailRendering {
        { index in
            guard let launch = configuration.worker else {
                return InProcessRenderer(thumbnailer: Thumbnailer(limits: configuration.limits, tuning: configuration.tuning),
                                         maxFileBytes: configuration.limits.maxFileBytes)
            }
            let supervisor = RenderWorkerSupervisor(launch: launch, counters: counters, backoff: respawnBackoff)
            let videoSupervisor = RenderWorkerSupervisor(launch: launch.loadingVideo(), counters: counters, backoff: respawnBackoff)
            return SandboxedRenderer(supervisor: supervisor, videoSupervisor: videoSupervisor, limits: configuration.limits, tuning: configuration.tuning,
                                     renderSeconds: configuration.renderSeconds, log: configuration.log,
                                     label: "render thread \(index)")
        }
    }

    static let maxJobsPerDecode = 8

    /// A worker that died on a file has cost that file's requests and the file is remembered, so
    /// a storm of bad files needs no long pause (each respawn costs a few milliseconds); what the
    /// backoff guards against is a worker that cannot start at all, which 100 ms between tries
    /// keeps from spinning.
    static let respawnBackoff = WorkerBackoff(firstDelaySeconds: 0.005, maxDelaySeconds: 0.1)

    func render(_ group: RenderGroup, with renderer: any ThumbnailRendering) -> FinishedGroup {
        let wallStart = ContinuousClock.now
        let cpuStart = Self.threadCPUSeconds()
        let result = groupRender.run(group, on: renderer)
        let cpuSeconds = (Self.threadCPUSeconds() - cpuStart + result.rendererCPUSeconds) / Double(group.jobs.count)
        return FinishedGroup(group: group, outcomes: result.outcomes, cpuSecondsEach: cpuSeconds,
                             wallSeconds: (ContinuousClock.now - wallStart) / .seconds(1), computedPlaceholder: result.computedPlaceholder,
                             sourceFormat: result.sourceFormat)
    }

    func takeGroup(after finished: FinishedGroup?) -> RenderGroup? {
        var answers = Answers()
        let (next, clients) = state.withLock { state -> (RenderGroup?, [[String]]) in
            var clients: [[String]] = []
            if let finished {
                clients = state.finish(finished.group.jobs, outcomes: finished.outcomes, cpuSecondsEach: finished.cpuSecondsEach,
                                       wallSeconds: finished.wallSeconds, into: &answers)
                if finished.computedPlaceholder { state.metrics.placeholdersComputed += 1 }
                if let format = finished.sourceFormat { state.metrics.decodesBySourceFormat[format, default: 0] += 1 }
                gate.admitEarly(&answers) { slot, claim, token in state.admitDelivery(to: slot, claim: claim, token: token) }
            }
            guard !state.shuttingDown else { return (nil, clients) }
            let next = state.jobs.takeGroup(maxJobs: Self.maxJobsPerDecode)
            if next == nil { state.idleRenderThreads += 1 }
            // A job held back by its callers' share may start now that this one is done: for an idle thread.
            handOutWork(&state)
            return (next, clients)
        }
        deliver(answers)
        // Outside the lock (whoever waits reads the queue under it: `waitForQueueRoom`).
        queueTaken.update { _ in }
        if let finished {
            if configuration.logsRenders { logRenders(finished, clients: clients) }
            // The queue has room again: the backlog may send more.
            kickBacklog()
        }
        return next
    }

    /// Under the lock, at the end of a decision that queued work (or freed a caller's share):
    /// each idle render thread is handed a group while one may start.
    func handOutWork(_ state: inout PipelineState) {
        while state.idleRenderThreads > 0, let group = state.jobs.takeGroup(maxJobs: Self.maxJobsPerDecode) {
            state.idleRenderThreads -= 1
            renderThreads.hand(group)
        }
    }

    /// Waits until a new job of `priority` would fit in the queue, or `timeoutSeconds` pass
    /// (false): how batch work paces itself on a full queue instead of sleeping and asking again.
    /// Room comes when a render thread takes a job (or when waiters leave: the timeout covers that).
    package func waitForQueueRoom(priority: Priority, timeoutSeconds: Double) -> Bool {
        queueTaken.wait(until: { _ in
            state.withLock { $0.shuttingDown || $0.jobs.queuedJobs < $0.jobs.queueLimit(for: priority) }
        }, timeoutSeconds: timeoutSeconds)
    }

    /// One event per render, outside the lock: `rendered` (info) or `render-failed` (notice);
    /// a cancelled render is no event (its slot moved on).
    func logRenders(_ finished: FinishedGroup, clients: [[String]]) {
        let milliseconds = CheckedConversion.clampedInteger(finished.wallSeconds * 1000, to: 0...1_000_000_000)
        for (index, (job, outcome)) in zip(finished.group.jobs, finished.outcomes).enumerated() {
            let kind = "\(job.request.kind.name)@\(job.request.scale)x"
            let waiting = index < clients.count ? clients[index] : []
            var fields = LogFields(asset: job.asset.path, kind: kind, client: waiting.isEmpty ? nil : waiting.joined(separator: ","))
            switch outcome {
            case .success(let thumbnail):
                fields.event = "rendered"
                configuration.log.info("rendered \(job.asset.path) as \(kind): \(thumbnail.width)x\(thumbnail.height) "
                                       + "\(thumbnail.format.rawValue), \(thumbnail.bytes.count) bytes, \(milliseconds) ms", fields)
            case .failure(.cancelled):
                continue
            case .failure(let failure):
                fields.event = "render-failed"
                // Notice, not warning: a file that cannot be rendered is the catalogue's problem, not the daemon's.
                configuration.log.notice("render of \(job.asset.path) as \(kind) failed: \(failure.reason)", fields)
            }
        }
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
