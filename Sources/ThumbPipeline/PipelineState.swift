import ThumbImaging

/// Everything the pipeline's lock guards: the slot rules, the job table, the prefetch groups
/// and the counters. The tables decide; this type only strings their decisions together where
/// one touches the other (a finished job frees its waiters' slots, bytes for a slot pin it until
/// the delivery gate has looked) and counts.
struct PipelineState {
    var slots: SlotTable
    var jobs: JobTable
    var groups = PrefetchGroups()
    var shuttingDown = false
    var metrics = PipelineMetrics()
    /// Render threads waiting for a group (`ThumbnailPipeline.handOutWork` gives them one).
    var idleRenderThreads = 0

    init(configuration: PipelineConfiguration) {
        slots = SlotTable(bounds: .init(maxSlots: configuration.maxSlots, maxTableBytes: configuration.maxSlotTableBytes,
                                        idleSeconds: configuration.slotIdleSeconds))
        jobs = JobTable(maxQueuedJobs: configuration.maxQueuedJobs, cancelsAbandonedWork: configuration.cancelsAbandonedWork,
                        maxRunningPerOwner: configuration.renderAdmission?.maxRunningRenders(workers: configuration.workers) ?? .max)
    }

    /// Adds the answer for a request to `answers`: bytes for a request that holds a slot claim go
    /// through the delivery gate (and pin the slot until then), everything else goes straight out.
    mutating func answer(_ completion: Completion?, slot: SlotID?, claim: UInt64?, token: UInt64?,
                         _ result: Result<CachedThumbnail, ThumbFailure>, into answers: inout Answers) {
        guard let completion else { return }
        let response = PipelineResponse(token: token, result: result)
        if case .success = result, let slot, let claim {
            slots.expectDelivery(to: slot)
            answers.addGated(completion, response, slot: slot, claim: claim)
        } else {
            answers.add(completion, response)
        }
    }

    /// The delivery gate's check (see `DeliveryGate`), counted like the answers it turns into.
    mutating func admitDelivery(to slot: SlotID, claim: UInt64, token: UInt64?) -> SlotTable.Admission {
        let admission = slots.admitDelivery(to: slot, claim: claim, token: token)
        switch admission {
        case .deliver: break
        case .superseded: metrics.superseded += 1
        case .cancelled: metrics.cancelled += 1
        }
        return admission
    }

    /// Removes a waiter from its job (see `JobTable.detach`), counting a dropped job.
    mutating func detach(_ reference: WaiterRef) -> Waiter? {
        guard let (waiter, effect) = jobs.detach(reference) else { return nil }
        if effect == .dropped { metrics.droppedJobs += 1 }
        return waiter
    }

    /// A worker is done with a group of jobs (one decode): counts the renders (CPU shared evenly,
    /// `cpuSecondsEach`) and answers every waiter of each job with its outcome. Returns, per job,
    /// the clients (of slots) that were waiting for it.
    @discardableResult
    mutating func finish(_ jobs: [RenderJob], outcomes: [Result<CachedThumbnail, ThumbFailure>],
                         cpuSecondsEach: Double, wallSeconds: Double, into answers: inout Answers) -> [[String]] {
        var clients: [[String]] = []
        for (job, outcome) in zip(jobs, outcomes) {
            metrics.renders += 1
            metrics.renderCPUSeconds += cpuSecondsEach
            metrics.recordRender(seconds: wallSeconds)
            if case .failure(.cancelled) = outcome { metrics.abortedRenders += 1 }
            let waiters = self.jobs.finish(job)
            if let latency = job.cancelLatencySeconds {
                metrics.cancelLatencyCount += 1
                metrics.cancelLatencySecondsSum += latency
                metrics.cancelLatencySecondsMax = max(metrics.cancelLatencySecondsMax, latency)
            }
            if waiters.isEmpty {
                metrics.wastedCPUSeconds += cpuSecondsEach
                metrics.wastedRenders += 1
            }
            if case .failure(let error) = outcome, error != .cancelled {
                metrics.failures += 1
                metrics.failuresByCode[error.disposition.code, default: 0] += 1
            }
            var waiting: [String] = []
            for waiter in waiters {
                if let client = waiter.slot?.client, !waiting.contains(client) { waiting.append(client) }
                if let slot = waiter.slot { slots.clearLiveWaiter(of: slot, waiterID: waiter.id) }
                answer(waiter.completion, slot: waiter.slot, claim: waiter.claim, token: waiter.token, outcome, into: &answers)
            }
            clients.append(waiting)
        }
        return clients
    }

    /// Shutdown: queued jobs leave, their waiters are answered `shuttingDown`. False when the
    /// pipeline was shutting down already.
    mutating func shutDown(into answers: inout Answers) -> Bool {
        guard !shuttingDown else { return false }
        shuttingDown = true
        for waiter in jobs.removeQueued() {
            answers.add(waiter, .init(token: waiter.token, result: .failure(.shuttingDown)))
            if let slot = waiter.slot { slots.clearLiveWaiter(of: slot, waiterID: waiter.id) }
        }
        return true
    }
}

/// Prefetch batches by id, with their waiters, so that a batch can be withdrawn.
struct PrefetchGroups {
    /// Past this many batches, those whose work is all done are forgotten.
    static let maxGroups = 1024

    private(set) var waiters: [String: [WaiterRef]] = [:]

    mutating func add(_ waiter: WaiterRef, to group: String, isWaiting: (WaiterRef) -> Bool) {
        waiters[group, default: []].append(waiter)
        if waiters.count > Self.maxGroups {
            waiters = waiters.filter { $0.value.contains(where: isWaiting) }
        }
    }

    mutating func withdraw(_ group: String) -> [WaiterRef] {
        waiters.removeValue(forKey: group) ?? []
    }
}
