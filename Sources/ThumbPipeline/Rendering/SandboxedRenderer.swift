package import ThumbImaging
import ThumbSystem
package import ThumbWorker

/// Renders in the render thread's own worker process: the daemon opens the file (the confined
/// open) and passes the descriptor; the worker reads, decodes and encodes, and can touch nothing
/// else. A worker that dies or runs past `renderSeconds` costs this group only
/// (`renderCrashed` / `renderTimedOut`, which the failure table remembers until the file
/// changes, so that one file cannot crash-loop the pool).
///
/// Videos go to a second worker of the thread's, started at the first video: only it maps
/// FFmpeg (`WorkerLaunch.loadsVideo`). The daemon tells a video by the file's first bytes, as
/// every decoder does; it never decodes them.
package final class SandboxedRenderer: ThumbnailRendering {
    let supervisor: RenderWorkerSupervisor
    let videoSupervisor: RenderWorkerSupervisor
    let limits: ImageLimits
    let tuning: ShrinkPlan.Tuning
    let renderSeconds: Double
    let log: PipelineLog
    let label: String

    package init(supervisor: RenderWorkerSupervisor, videoSupervisor: RenderWorkerSupervisor, limits: ImageLimits,
                 tuning: ShrinkPlan.Tuning, renderSeconds: Double, log: PipelineLog, label: String) {
        self.supervisor = supervisor
        self.videoSupervisor = videoSupervisor
        self.limits = limits
        self.tuning = tuning
        self.renderSeconds = renderSeconds
        self.log = log
        self.label = label
    }

    package func start() {
        // A failure here is retried (with backoff) by the first render.
        do throws(WorkerSpawnError) { try supervisor.start() } catch {
            log.warning("\(label): \(error)")
        }
    }

    package func stop() {
        supervisor.shutdown()
        videoSupervisor.shutdown()
    }

    package func cancelCurrentRender() {
        // One of them renders (the thread renders one group at a time): the other has nothing to stop.
        supervisor.cancelCurrent()
        videoSupervisor.cancelCurrent()
    }

    package func render(_ file: AssetFile, requests: [ThumbnailRequest], placeholder: PlaceholderDemand,
                        isCancelled: @escaping @Sendable () -> Bool) -> RenderAttempt {
        let version = file.version
        let path = version.path
        let decoder = SourceFormat.sniff(descriptor: file.descriptor)?.row.media == .video ? videoSupervisor : supervisor
        let outcome = decoder.render(source: file.descriptor, status: version.fileStatus, label: path, requests: requests,
                                        limits: limits, tuning: tuning, deadlineSeconds: renderSeconds,
                                        placeholder: placeholder, isCancelled: isCancelled)
        switch outcome {
        case .rendered(let answer):
            if case .failure(.read(.changed(let reason))) = answer.results.first {
                return .changed(reason: reason, cpuSeconds: answer.cpuSeconds)
            }
            // The worker proved its read whole; the daemon checks, from its own descriptor, that
            // the file is still the version the thumbnails will be keyed by.
            if let now = try? FileStatus.of(descriptor: file.descriptor, label: path).0, now != version.fileStatus {
                return .changed(reason: "\(path) was modified while being rendered", cpuSeconds: answer.cpuSeconds)
            }
            return .rendered(answer.results.map { $0.mapError { ThumbFailure($0, path: path) } },
                             placeholder: answer.placeholder, placements: answer.placements, sourceFormat: answer.sourceFormat,
                             cpuSeconds: answer.cpuSeconds)
        case .crashed, .timedOut, .unavailable:
            let failure = ThumbFailure(outcome, renderSeconds: renderSeconds) ?? .rendererUnavailable(reason: "no answer")
            if case .crashed(let death) = outcome {
                log.warning("\(path): the render worker died on it: \(death); remembered until the file changes")
            } else if failure.disposition.negativeRecord != nil {
                log.warning("\(path): \(failure.reason); remembered until the file changes")
            }
            return .failed(failure, cpuSeconds: outcome.cpuSeconds)
        }
    }
}
