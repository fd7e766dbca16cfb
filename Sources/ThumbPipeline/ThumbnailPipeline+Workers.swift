import Foundation
import ThumbImaging

extension ThumbnailPipeline {
    func startWorkers() {
        for index in 0..<max(1, configuration.workers) {
            workersDone.enter()
            let thread = Thread { [self] in
                workerLoop()
                workersDone.leave()
            }
            thread.name = "thumbd-render-\(index)"
            thread.start()
        }
    }

    private func workerLoop() {
        while true {
            workAvailable.wait()
            let next: RenderJob?? = state.withLock { state in
                guard !state.shuttingDown else { return .some(nil) }
                guard let entry = state.popQueued(),
                      var record = state.jobs[entry.digest] else { return nil }
                record.phase = .running
                state.jobs[entry.digest] = record
                state.queuedJobs -= 1
                state.runningRenders += 1
                return .some(record.job)
            }
            switch next {
            case .some(nil): return          // shutting down
            case nil: continue                // a stale wake-up: the job was dropped
            case .some(let job?): run(job)
            }
        }
    }

    /// Renders one job on this worker thread and answers its waiters.
    func run(_ job: RenderJob) {
        let wallStart = ContinuousClock.now
        let cpuStart = Self.threadCPUSeconds()
        let outcome = render(job)
        let cpuSeconds = Self.threadCPUSeconds() - cpuStart
        let wallSeconds = (ContinuousClock.now - wallStart) / .seconds(1)
        locked { state, answers in
            state.runningRenders -= 1
            state.metrics.renders += 1
            state.metrics.renderCPUSeconds += cpuSeconds
            state.metrics.recordRender(seconds: wallSeconds)
            if case .failure(.cancelled) = outcome { state.metrics.abortedRenders += 1 }
            var waiters: [Waiter] = []
            if let record = state.jobs[job.key.digest], record.job === job {
                state.jobs[job.key.digest] = nil
                waiters = Array(record.waiters.values)
            }
            if let latency = job.secondsSinceCancel {
                state.metrics.cancelLatencySecondsSum += latency
                state.metrics.cancelLatencySecondsMax = max(state.metrics.cancelLatencySecondsMax, latency)
            }
            if waiters.isEmpty {
                state.metrics.wastedCPUSeconds += cpuSeconds
                state.metrics.wastedRenders += 1
            }
            if case .failure(let error) = outcome, error != .cancelled { state.metrics.failures += 1 }
            for waiter in waiters {
                if let slot = waiter.slot, state.slots[slot]?.liveWaiter?.waiterID == waiter.id {
                    state.slots[slot]?.liveWaiter = nil
                }
                answers.add(waiter, .init(token: waiter.token, result: outcome))
            }
        }
    }

    private func render(_ job: RenderJob) -> Result<CachedThumbnail, PipelineError> {
        if job.isCancelled { return .failure(.cancelled) }
        let source: SourceBytes
        do {
            source = try SourceBytes.read(path: job.absolutePath, maxBytes: configuration.limits.maxFileBytes)
        } catch {
            switch error.kind {
            case .notFound: return .failure(.notFound(path: job.asset.path))
            case .tooLarge:
                disk.recordFailure(job.asset, kind: "tooLarge", reason: error.reason)
                return .failure(.tooLarge(reason: error.reason))
            case .notRegularFile, .unreadable: return .failure(.forbidden(path: job.asset.path, reason: error.reason))
            }
        }
        // The file may have changed since the request was keyed: key what was actually read.
        var key = job.key
        var asset = job.asset
        if let status = source.fileStatus,
           status.size != asset.size || status.modifiedNanoseconds != asset.modifiedNanoseconds || status.inode != asset.inode {
            asset = AssetVersion(path: asset.path, size: status.size, modifiedNanoseconds: status.modifiedNanoseconds,
                                 inode: status.inode, device: status.device)
            key = CacheKey(asset: asset, kind: job.request.kind, scale: job.request.scale, encoder: job.request.encoder)
        }
        do {
            let hook = checkpointHook
            let thumbnail = try thumbnailer.thumbnail(of: source, request: job.request) {
                hook?()
                return job.isCancelled
            }
            let cached = CachedThumbnail(key: key, bytes: thumbnail.bytes,
                                         filePath: disk.filePath(for: key, format: thumbnail.format),
                                         format: thumbnail.format, width: thumbnail.width, height: thumbnail.height)
            // A cache that cannot store (disk full) still lets this answer go out.
            try? disk.insert(cached)
            memory.insert(cached)
            return .success(cached)
        } catch {
            switch error {
            case .cancelled:
                return .failure(.cancelled)
            case .tooLarge(let reason):
                disk.recordFailure(asset, kind: "tooLarge", reason: reason)
                return .failure(.tooLarge(reason: reason))
            case .unsupportedFormat(let reason), .undecodable(let reason), .encodingFailed(let reason):
                disk.recordFailure(asset, kind: "undecodable", reason: reason)
                return .failure(.undecodable(reason: reason))
            }
        }
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
