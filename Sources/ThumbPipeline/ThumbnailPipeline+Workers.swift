import Foundation
import ThumbImaging
import ThumbWorker

extension ThumbnailPipeline {
    func startWorkers() {
        for index in 0..<max(1, configuration.workers) {
            workersDone.enter()
            // Each render thread keeps its own worker process (when sandboxed): one render at a time each.
            let supervisor = configuration.worker.map {
                RenderWorkerSupervisor(launch: $0, counters: workerCounters, backoff: Self.respawnBackoff)
            }
            let thread = Thread { [self] in
                if let supervisor {
                    // At startup, so that the first request does not wait for a spawn; a failure
                    // here is retried (with backoff) by the first render.
                    do throws(WorkerSpawnError) { try supervisor.start() } catch {
                        configuration.log.warning("render thread \(index): \(error)")
                    }
                }
                workerLoop(supervisor)
                supervisor?.shutdown()
                workersDone.leave()
            }
            thread.name = "thumbd-render-\(index)"
            thread.start()
        }
    }

    private func workerLoop(_ supervisor: RenderWorkerSupervisor?) {
        while true {
            workAvailable.wait()
            let next: [RenderJob]? = state.withLock { state in
                guard !state.shuttingDown else { return .some([]) }
                return state.jobs.popGroup(maxJobs: Self.maxJobsPerDecode)
            }
            switch next {
            case .some(let jobs) where jobs.isEmpty: return // shutting down
            case nil: continue                               // a stale wake-up: the job was dropped
            case .some(let jobs): run(jobs, supervisor)
            }
        }
    }

    static let maxJobsPerDecode = 8

    /// A worker that died on a file has cost that file's requests and the file is remembered, so
    /// a storm of bad files needs no long pause (each respawn costs a few milliseconds); what the
    /// backoff guards against is a worker that cannot start at all, which 100 ms between tries
    /// keeps from spinning.
    static let respawnBackoff = WorkerBackoff(firstDelaySeconds: 0.005, maxDelaySeconds: 0.1)

    /// Renders a group of jobs of one asset (one decode) on this worker thread and answers
    /// their waiters (after the lock is released). CPU time is shared evenly among the jobs for the metrics.
    /// In a worker process when sandboxed (its CPU counted with this thread's), else on this thread.
    func run(_ jobs: [RenderJob], _ supervisor: RenderWorkerSupervisor?) {
        let wallStart = ContinuousClock.now
        let cpuStart = Self.threadCPUSeconds()
        let (outcomes, workerCPUSeconds) = if let supervisor { renderInWorker(jobs, supervisor) } else { (render(jobs), 0.0) }
        let cpuSeconds = (Self.threadCPUSeconds() - cpuStart + workerCPUSeconds) / Double(jobs.count)
        let wallSeconds = (ContinuousClock.now - wallStart) / .seconds(1)
        let (clients, wakesWorker) = locked { state, answers in
            (state.finish(jobs, outcomes: outcomes, cpuSecondsEach: cpuSeconds, wallSeconds: wallSeconds, into: &answers),
             state.jobs.hasHeldBackJobs)
        }
        // A job held back by its callers' share may start now that this one is done; the wake-up
        // that queued it may have been spent on a worker that found nothing it could start.
        if wakesWorker { workAvailable.signal() }
        if configuration.logsRenders { logRenders(jobs, outcomes: outcomes, clients: clients, wallSeconds: wallSeconds) }
        // The queue has room again: the backlog may send more.
        kickBacklog()
    }

    /// One event per render, outside the lock: `rendered` (info) or `render-failed` (notice);
    /// a cancelled render is no event (its slot moved on).
    func logRenders(_ jobs: [RenderJob], outcomes: [Result<CachedThumbnail, ThumbFailure>], clients: [[String]], wallSeconds: Double) {
        let milliseconds = CheckedConversion.clampedInteger(wallSeconds * 1000, to: 0...1_000_000_000)
        for (index, (job, outcome)) in zip(jobs, outcomes).enumerated() {
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
