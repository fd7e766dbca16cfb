import Dispatch
import ThumbImaging

extension ThumbnailPipeline {
    /// The request path: resolve, look in the caches, then (under the lock) apply the slot's
    /// token rules and answer or attach to a job.
    func prepare(_ request: PipelineRequest, completion: @escaping @Sendable (PipelineResponse) -> Void) -> UInt64? {
        var lookup: Result<CachedThumbnail?, ThumbFailure>
        var resolved: (absolutePath: String, version: AssetVersion)?
        var key: CacheKey?
        var cacheLevel = 0 // 1 memory, 2 disk
        do {
            let found = try assets.resolve(request.assetPath)
            resolved = found
            let candidate = CacheKey(asset: found.version, kind: request.kind, scale: request.scale, encoder: configuration.encoder)
            key = candidate
            // A memory hit first: it proves the version decodes, and costs no index query.
            if let hit = memory.thumbnail(for: candidate) {
                lookup = .success(hit)
                cacheLevel = 1
            } else if let failure = disk.failure(for: found.version) {
                lookup = .failure(failure)
            } else if let hit = disk.thumbnail(for: candidate) {
                memory.insert(hit)
                lookup = .success(hit)
                cacheLevel = 2
            } else {
                lookup = .success(nil)
            }
        } catch {
            lookup = .failure(ThumbFailure(error))
        }

        return locked { state, answers -> UInt64? in
            state.metrics.requests += 1
            guard !state.shuttingDown else {
                answers.add(completion, .init(token: request.token, result: .failure(.shuttingDown)))
                return request.token
            }
            // Slot rules first: even a request that fails at once takes over its cell.
            var token: UInt64?
            var previousLive: PipelineState.WaiterRef?
            if let slot = request.slot {
                let now = ContinuousClock.now
                if state.slots[slot] == nil {
                    guard state.makeRoomForSlot(slot, maxSlots: configuration.maxSlots, maxBytes: configuration.maxSlotTableBytes,
                                                idleSeconds: configuration.slotIdleSeconds, now: now) else {
                        state.metrics.overloaded += 1
                        answers.add(completion, .init(token: request.token, result: .failure(.overloaded)))
                        return request.token
                    }
                    state.insertSlot(slot, .init(token: 0, liveWaiter: nil, lastUse: now))
                }
                let current = state.slots[slot]?.token ?? 0
                if let asked = request.token, asked < current {
                    state.metrics.superseded += 1
                    answers.add(completion, .init(token: asked, result: .failure(.superseded(currentToken: current))))
                    return asked
                }
                let issued = request.token ?? SlotToken.issued(after: current)
                token = issued
                previousLive = state.slots[slot]?.liveWaiter
                state.slots[slot]?.token = issued
                state.slots[slot]?.liveWaiter = nil
                state.slots[slot]?.lastUse = now
            }
            // The slot's older request is detached only after the new one is attached, so that
            // asking again for the same thumbnail keeps its running job instead of restarting it.
            defer {
                if let previousLive, let removed = detach(previousLive, in: &state) {
                    state.metrics.superseded += 1
                    answers.add(removed, .init(token: removed.token, result: .failure(.superseded(currentToken: token ?? 0))))
                }
            }
            switch lookup {
            case .failure(let error):
                // Only a remembered failure gets here as one of the kinds the table remembers.
                if error.disposition.negativeRecord != nil { state.metrics.negativeHits += 1 }
                answers.add(completion, .init(token: token, result: .failure(error)))
            case .success(let hit?):
                if cacheLevel == 1 { state.metrics.memoryHits += 1 } else { state.metrics.diskHits += 1 }
                answers.add(completion, .init(token: token, result: .success(hit)))
            case .success(nil):
                guard let key, let resolved else { return token }
                state.metrics.misses += 1
                let waiter = Waiter(id: state.makeID(), slot: request.slot, token: token, priority: request.priority,
                                    completion: completion)
                if !attach(waiter, key: key, resolved: resolved, kind: request.kind, scale: request.scale,
                           parks: previousLive != nil, in: &state) {
                    state.metrics.overloaded += 1
                    answers.add(completion, .init(token: token, result: .failure(.overloaded)))
                } else if let slot = request.slot {
                    state.slots[slot]?.liveWaiter = .init(digest: key.digest, waiterID: waiter.id)
                }
            }
            return token
        }
    }

    /// Queues background work (pre-rendering, batch) that nobody is told about: it coalesces
    /// with visible requests and keeps its job alive until done. False when refused.
    /// `group` names a prefetch batch that `cancelGroup` can withdraw.
    @discardableResult
    public func prerender(assetPath: String, kind: SlotKind, scale: Int, priority: Priority = .batch, group: String? = nil) -> Bool {
        guard let resolved = try? assets.resolve(assetPath) else { return false }
        if disk.failure(for: resolved.version) != nil { return false }
        let key = CacheKey(asset: resolved.version, kind: kind, scale: scale, encoder: configuration.encoder)
        if disk.contains(key) { return true }
        return state.withLock { state in
            guard !state.shuttingDown else { return false }
            let waiter = Waiter(id: state.makeID(), slot: nil, token: nil, priority: priority, completion: nil)
            guard attach(waiter, key: key, resolved: resolved, kind: kind, scale: scale, parks: false, in: &state) else { return false }
            if let group {
                state.groups[group, default: []].append(.init(digest: key.digest, waiterID: waiter.id))
                if state.groups.count > 1024 {
                    // Forget batches whose work is all done, so the table stays bounded.
                    let jobs = state.jobs
                    state.groups = state.groups.filter { $0.value.contains { jobs[$0.digest]?.waiters[$0.waiterID] != nil } }
                }
            }
            return true
        }
    }

    /// Whether the disk cache holds this thumbnail for the asset's current version (no render, no read).
    public func isCached(assetPath: String, kind: SlotKind, scale: Int) -> Bool {
        guard let resolved = try? assets.resolve(assetPath) else { return false }
        return disk.contains(CacheKey(asset: resolved.version, kind: kind, scale: scale, encoder: configuration.encoder))
    }

    /// Withdraws a prefetch batch: its work is cancelled unless someone else wants it.
    /// Returns how many of its requests were still waiting.
    @discardableResult
    public func cancelGroup(_ group: String) -> Int {
        state.withLock { state in
            let references = state.groups.removeValue(forKey: group) ?? []
            return references.reduce(0) { count, reference in count + (detach(reference, in: &state) == nil ? 0 : 1) }
        }
    }

    /// Adds `waiter` to the job for `key`, creating and queueing the job if there is none.
    /// `parks`: the waiter comes from a cell in motion (see `flingDebounceSeconds`).
    /// False when a new job would overflow the queue, or the share of it `waiter`'s priority may use.
    func attach(_ waiter: Waiter, key: CacheKey, resolved: (absolutePath: String, version: AssetVersion),
                kind: SlotKind, scale: Int, parks: Bool, in state: inout PipelineState) -> Bool {
        if var record = state.jobs[key.digest], record.job.key == key {
            state.metrics.coalesced += 1
            record.waiters[waiter.id] = waiter
            if record.parked {
                record.priority = max(record.priority, waiter.priority)
                if !parks {
                    // Someone on a settled cell wants it: no reason to wait any longer.
                    record.parked = false
                    state.queue.push(.init(digest: key.digest, generation: record.job.generation), priority: record.priority)
                    workAvailable.signal()
                }
            } else if record.phase == .queued && waiter.priority >= record.priority {
                // A more urgent (or newer visible) waiter moves the job up: the old entry goes stale.
                record.priority = waiter.priority
                state.queue.push(.init(digest: key.digest, generation: record.job.generation), priority: waiter.priority)
            }
            state.jobs[key.digest] = record
            return true
        }
        guard state.queuedJobs < configuration.queueLimit(for: waiter.priority) else { return false }
        let request = ThumbnailRequest(kind: kind, scale: scale, encoder: configuration.encoder)
        let job = RenderJob(key: key, asset: resolved.version, absolutePath: resolved.absolutePath, request: request,
                            generation: state.makeID())
        var record = JobRecord(job: job, priority: waiter.priority)
        record.waiters[waiter.id] = waiter
        state.queuedJobs += 1
        if parks && configuration.flingDebounceSeconds > 0 {
            record.parked = true
            state.jobs[key.digest] = record
            state.metrics.parkedJobs += 1
            let generation = job.generation
            DispatchQueue.global().asyncAfter(deadline: .now() + configuration.flingDebounceSeconds) { [weak self] in
                self?.unpark(digest: key.digest, generation: generation)
            }
            return true
        }
        state.jobs[key.digest] = record
        state.queue.push(.init(digest: key.digest, generation: job.generation), priority: waiter.priority)
        state.compactQueueIfNeeded()
        workAvailable.signal()
        return true
    }

    /// The debounce is over: a parked job that someone still waits for joins the queue.
    func unpark(digest: String, generation: UInt64) {
        state.withLock { state in
            guard var record = state.jobs[digest], record.job.generation == generation, record.parked else { return }
            record.parked = false
            state.jobs[digest] = record
            state.queue.push(.init(digest: digest, generation: generation), priority: record.priority)
            workAvailable.signal()
        }
    }

    /// Removes a waiter from its job; a job nobody waits for any more is dropped from the
    /// queue, or told to stop at its next checkpoint if it is running.
    func detach(_ reference: PipelineState.WaiterRef, in state: inout PipelineState) -> Waiter? {
        guard var record = state.jobs[reference.digest],
              let waiter = record.waiters.removeValue(forKey: reference.waiterID) else { return nil }
        if record.waiters.isEmpty && configuration.cancelsAbandonedWork {
            state.jobs[reference.digest] = nil
            if record.phase == .queued {
                state.queuedJobs -= 1
                state.metrics.droppedJobs += 1
            } else {
                record.job.cancel()
            }
            return waiter
        }
        if record.phase == .queued, !record.parked, let highest = record.waitersPriority, highest != record.priority {
            record.priority = highest
            state.queue.push(.init(digest: reference.digest, generation: record.job.generation), priority: highest)
        }
        state.jobs[reference.digest] = record
        return waiter
    }
}
