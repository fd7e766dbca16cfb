import ThumbImaging
import ThumbSystem
import ThumbWorker

extension ThumbnailPipeline {
    typealias Outcomes = [Result<CachedThumbnail, ThumbFailure>]

    /// Renders a group of jobs of one asset in this thread's worker process. The daemon opens the
    /// file (the confined open) and passes the descriptor; the worker reads, decodes and encodes,
    /// and can touch nothing else. A worker that dies or runs past `renderSeconds` costs these
    /// requests only (`renderCrashed` / `renderTimedOut`), and the file's version is remembered so
    /// that it cannot crash-loop the pool. Returns the worker's CPU seconds with the outcomes.
    func renderInWorker(_ jobs: [RenderJob], _ supervisor: RenderWorkerSupervisor) -> (Outcomes, Double) {
        let path = jobs[0].asset.path
        func all(_ failure: ThumbFailure) -> Outcomes { jobs.map { _ in .failure(failure) } }
        if jobs.allSatisfy(\.isCancelled) { return (all(.cancelled), 0) }
        var workerCPUSeconds = 0.0
        var change = ""
        // A file written while it is rendered is tried once more (as the in-process read does).
        for _ in 0..<2 {
            let file: AssetFile
            do {
                file = try assets.openForReading(path)
            } catch {
                return (all(ThumbFailure(error)), workerCPUSeconds)
            }
            sourceOpenedHook?(file.version)
            let version = file.version
            // The shared decode stops only when every job of the group is cancelled.
            for job in jobs { job.whenCancelled { if jobs.allSatisfy(\.isCancelled) { supervisor.cancelCurrent() } } }
            let order = decodeOrder(jobs, of: version)
            let outcome = supervisor.render(source: file.descriptor, status: version.fileStatus, label: path,
                                            requests: order.requests, limits: configuration.limits,
                                            tuning: configuration.tuning, deadlineSeconds: configuration.renderSeconds,
                                            placeholder: order.placeholder,
                                            isCancelled: { jobs.allSatisfy(\.isCancelled) })
            for job in jobs {
                job.whenCancelled(nil)
                job.noteDecodeStopped()
            }
            switch outcome {
            case .rendered(let answer):
                workerCPUSeconds += answer.cpuSeconds
                if case .failure(.read(.changed(let reason))) = answer.results.first {
                    change = reason
                    continue
                }
                // The worker proved its read whole; the daemon checks, from its own descriptor,
                // that the file is still the version the thumbnails will be keyed by.
                if let now = try? FileStatus.of(descriptor: file.descriptor, label: path).0, now != version.fileStatus {
                    change = "\(path) was modified while being rendered"
                    continue
                }
                keep(answer.placeholder, placements: answer.placements, of: version)
                return (accept(answer, of: version, for: jobs), workerCPUSeconds)
            case .crashed(let death):
                workerCPUSeconds += death.cpuSeconds
                let failure = ThumbFailure.renderCrashed(reason: "render worker \(death)")
                configuration.log.warning("\(path): the render worker died on it: \(death); remembered until the file changes")
                remember(failure, of: version)
                return (all(failure), workerCPUSeconds)
            case .timedOut(let seconds, let cpuSeconds):
                workerCPUSeconds += cpuSeconds
                let failure = ThumbFailure.renderTimedOut(
                    reason: "took longer than \(configuration.renderSeconds) s (the worker was killed after \((seconds * 10).rounded() / 10) s)")
                configuration.log.warning("\(path): \(failure.reason); remembered until the file changes")
                remember(failure, of: version)
                return (all(failure), workerCPUSeconds)
            case .unavailable(let error):
                return (all(.rendererUnavailable(reason: error.description)), workerCPUSeconds)
            }
        }
        return (all(.assetChanging(path: path, reason: change)), workerCPUSeconds)
    }

    /// Stores the worker's thumbnails under the version the daemon opened, and turns its typed
    /// failures into the pipeline's (remembering those the table remembers, once per file).
    private func accept(_ answer: WorkerAnswer, of version: AssetVersion, for jobs: [RenderJob]) -> Outcomes {
        var remembered = false
        return zip(jobs, answer.results).map { job, result in
            let failure: ThumbFailure
            switch result {
            case .success(let thumbnail): return .success(store(thumbnail, of: version, for: job))
            case .failure(.imaging(let error)): failure = ThumbFailure(error)
            case .failure(.read(.tooLarge(let reason))): failure = .tooLarge(reason: reason)
            case .failure(.read(.unreadable(let reason))), .failure(.read(.changed(let reason))):
                failure = .unreadable(path: version.path, reason: reason)
            }
            if !remembered && failure.disposition.negativeRecord != nil {
                remember(failure, of: version)
                remembered = true
            }
            return .failure(failure)
        }
    }

    func remember(_ failure: ThumbFailure, of version: AssetVersion) {
        if let record = failure.disposition.negativeRecord { disk.recordFailure(version, record: record, reason: failure.reason) }
    }
}
