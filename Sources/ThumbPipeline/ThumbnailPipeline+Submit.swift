import ThumbSystem
package import ThumbImaging

extension ThumbnailPipeline {
    /// The request path: resolve, look in the caches, then (under the lock) ask the slot table
    /// for the token decision and the job table for a job, and collect the answers; they are
    /// delivered once the lock is released (`locked`).
    func prepare(_ request: PipelineRequest, completion: @escaping @Sendable (PipelineResponse) -> Void) -> UInt64? {
        var lookup: Result<CachedThumbnail?, ThumbFailure>
        var resolved: (absolutePath: String, version: AssetVersion)?
        var key: CacheKey?
        var cacheLevel = 0 // 1 memory, 2 disk
        var vouchedHit = false
        let variant = ThumbnailVariant(kind: request.kind, scale: request.scale, format: request.format)
        if let hit = memory.vouchedThumbnail(assetPath: request.assetPath, variant: variant) {
            // The watcher vouches for the version this entry was keyed with: no look at the file.
            // Without a slot there is no rule to apply and nothing to supersede: no lock either.
            if request.slot == nil, !lifecycle.isStopping {
                lockFreeHits.add(1, ordering: .relaxed)
                gate.deliverDirect(completion, .init(token: nil, result: .success(hit)))
                return nil
            }
            lookup = .success(hit)
            cacheLevel = 1
            vouchedHit = true
        } else {
            lookup = resolveAndLook(request, variant: variant, encoder: configuration.encoder(for: request.kind, format: request.format),
                                    resolved: &resolved, key: &key, cacheLevel: &cacheLevel)
        }

        return locked { state, answers -> UInt64? in
            state.metrics.requests += 1
            if vouchedHit { state.metrics.vouchedHits += 1 } else { state.metrics.assetResolves += 1 }
            guard !state.shuttingDown else {
                answers.add(completion, .init(token: request.token, result: .failure(.shuttingDown)))
                return request.token
            }
            // Slot rules first: even a request that fails at once takes over its cell.
            var token: UInt64?
            var claim: UInt64?
            var previousLive: WaiterRef?
            if let slot = request.slot {
                switch state.slots.claim(slot, askedToken: request.token, now: .now) {
                case .full:
                    state.metrics.overloaded += 1
                    answers.add(completion, .init(token: request.token, result: .failure(.overloaded)))
                    return request.token
                case .late(let current):
                    state.metrics.superseded += 1
                    answers.add(completion, .init(token: request.token, result: .failure(.superseded(currentToken: current))))
                    return request.token
                case .tooFar(let current):
                    answers.add(completion, .init(token: current, result: .failure(.tokenTooFar(currentToken: current))))
                    return request.token
                case .claimed(let issued, let claimed, let previous):
                    (token, claim, previousLive) = (issued, claimed, previous)
                    // Before submit returns, deliveries to this slot already let through must be over.
                    answers.claimed(slot)
                }
            }
            // The slot's older request is detached only after the new one is attached, so that
            // asking again for the same thumbnail keeps its running job instead of restarting it.
            defer {
                if let previousLive, let removed = state.detach(previousLive) {
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
                state.answer(completion, slot: request.slot, claim: claim, token: token, .success(hit), into: &answers)
            case .success(nil):
                guard let key, let resolved else { return token }
                state.metrics.misses += 1
                var completion = completion
                if let owner = request.owner, let admission = configuration.renderAdmission {
                    // A waiting request counts against its caller's share until it is answered;
                    // only a render it would start is charged: joining one costs nothing.
                    if let refusal = admission.enterWait(owner: owner) {
                        state.metrics.refusedByShare += 1
                        answers.add(completion, .init(token: token, result: .failure(refusal)))
                        return token
                    }
                    if state.jobs.records[key.digest]?.job.key != key, let refusal = admission.admitRender(owner: owner) {
                        admission.leaveWait(owner: owner)
                        state.metrics.refusedByShare += 1
                        answers.add(completion, .init(token: token, result: .failure(refusal)))
                        return token
                    }
                    let answer = completion
                    completion = { response in
                        admission.leaveWait(owner: owner)
                        answer(response)
                    }
                }
                let waiter = Waiter(id: state.jobs.makeID(), slot: request.slot, token: token, claim: claim,
                                    priority: request.priority, completion: completion, wantsPlaceholder: request.wantsPlaceholder,
                                    owner: request.owner)
                if !attach(waiter, key: key, resolved: resolved, kind: request.kind, scale: request.scale,
                           encoder: configuration.encoder(for: request.kind, format: request.format),
                           parks: previousLive != nil, in: &state) {
                    state.metrics.overloaded += 1
                    answers.add(completion, .init(token: token, result: .failure(.overloaded)))
                } else {
                    if let slot = request.slot { state.slots.setLiveWaiter(.init(digest: key.digest, waiterID: waiter.id), of: slot) }
                    handOutWork(&state)
                }
            }
            return token
        }
    }

    /// The request's look at its asset: resolve it (its version is half the key), then the memory
    /// cache, the failure table, the disk cache. A memory or disk hit in a folder the watcher
    /// watches vouches for the version, so that the next hits skip all this (`VouchedVersions`).
    private func resolveAndLook(_ request: PipelineRequest, variant: ThumbnailVariant, encoder: EncoderSettings,
                                resolved: inout (absolutePath: String, version: AssetVersion)?, key: inout CacheKey?,
                                cacheLevel: inout Int) -> Result<CachedThumbnail?, ThumbFailure> {
        let watch = follower.vouching.withLock { $0 }
        // Read before the resolve: a drop of vouches after this refuses the vouch below.
        let generation = memory.currentVouchGeneration
        do {
            var links = 0
            let found: (absolutePath: String, version: AssetVersion)
            if watch != nil {
                let counted = try assets.resolveCountingLinks(request.assetPath)
                found = (counted.absolutePath, counted.version)
                links = counted.links
            } else {
                found = try assets.resolve(request.assetPath)
            }
            resolved = found
            let candidate = cacheKey(asset: found.version, kind: request.kind, scale: request.scale, encoder: encoder)
            key = candidate
            // A memory hit first: it proves the version decodes, and costs no index query.
            var hit = memory.thumbnail(for: candidate)
            var fromDisk: CachedThumbnail?
            if hit != nil {
                cacheLevel = 1
            } else if let failure = stores.failures.failure(for: found.version) {
                return .failure(failure)
            } else if let stored = stores.thumbnails.thumbnail(for: candidate) {
                fromDisk = stored
                hit = stored
                cacheLevel = 2
            }
            resolvedHook?(found.version)
            // A disk hit goes to memory after its lookup: an event handled in between finds
            // nothing there to drop, which is why the vouch checks the generation.
            if let fromDisk { memory.insert(fromDisk) }
            if hit != nil, let watch, watch.mayVouch(requestPath: request.assetPath, version: found.version, links: links) {
                memory.vouch(for: found.version, absolutePath: found.absolutePath, variant: variant, key: candidate, generation: generation)
            }
            return .success(hit)
        } catch {
            return .failure(ThumbFailure(error))
        }
    }

    /// Queues background work (pre-rendering, batch) that nobody is told about: it coalesces
    /// with visible requests and keeps its job alive until done. False when refused.
    /// `group` names a prefetch batch that `cancelGroup` can withdraw.
    @discardableResult
    /// `format` nil: the kind's preferred format. `scanned`: the version a scan of the root
    /// (`AssetScanner`: confined, regular, not excluded) just read — no resolution again, whose
    /// cost by path grows with the depth.
    package func prerender(assetPath: String, kind: SlotKind, scale: Int, priority: Priority = .batch, group: String? = nil,
                          format: EncoderSettings.Format? = nil, scanned: AssetVersion? = nil) -> Bool {
        guard let resolved = scanned.map({ (absolutePath: assets.path + "/" + $0.path, version: $0) }) ?? (try? assets.resolve(assetPath))
        else { return false }
        if stores.failures.failure(for: resolved.version) != nil { return false }
        let encoder = configuration.encoder(for: kind, format: format)
        let key = cacheKey(asset: resolved.version, kind: kind, scale: scale, encoder: encoder)
        if stores.thumbnails.contains(key) { return true }
        return state.withLock { state in
            guard !state.shuttingDown else { return false }
            let waiter = Waiter(id: state.jobs.makeID(), slot: nil, token: nil, priority: priority, completion: nil)
            guard attach(waiter, key: key, resolved: resolved, kind: kind, scale: scale, encoder: encoder, parks: false, in: &state) else { return false }
            handOutWork(&state)
            if let group {
                let jobs = state.jobs
                state.groups.add(.init(digest: key.digest, waiterID: waiter.id), to: group) { jobs.isWaiting($0) }
            }
            return true
        }
    }

    /// Whether the disk cache holds this thumbnail for the asset's current version (no render, no read).
    package func isCached(assetPath: String, kind: SlotKind, scale: Int, format: EncoderSettings.Format? = nil) -> Bool {
        guard let resolved = try? assets.resolve(assetPath) else { return false }
        return stores.thumbnails.contains(cacheKey(asset: resolved.version, kind: kind, scale: scale,
                                      encoder: configuration.encoder(for: kind, format: format)))
    }

    /// Withdraws a prefetch batch: its work is cancelled unless someone else wants it.
    /// Returns how many of its requests were still waiting.
    @discardableResult
    package func cancelGroup(_ group: String) -> Int {
        state.withLock { state in
            // Prefetch waiters have no completion: nothing to deliver.
            state.groups.withdraw(group).reduce(0) { count, reference in count + (state.detach(reference) == nil ? 0 : 1) }
        }
    }

    /// Adds `waiter` to the job for `key` (see `JobTable.attach`), creating the job if need be,
    /// and acts on the table's decision: end a parked job's debounce later. The caller hands
    /// the work out (`handOutWork`) once its decision is complete, so that jobs of one asset
    /// attached in one decision go to one decode.
    /// `parks`: the waiter comes from a cell in motion (see `flingDebounceSeconds`).
    /// False when a new job would overflow the queue, or the share of it `waiter`'s priority may use.
    func attach(_ waiter: Waiter, key: CacheKey, resolved: (absolutePath: String, version: AssetVersion),
                kind: SlotKind, scale: Int, encoder: EncoderSettings, parks: Bool, in state: inout PipelineState) -> Bool {
        let attachment = state.jobs.attach(waiter, key: key, parks: parks && configuration.flingDebounceSeconds > 0) { generation in
            RenderJob(key: key, asset: resolved.version, absolutePath: resolved.absolutePath,
                      request: ThumbnailRequest(kind: kind, scale: scale, encoder: encoder, focus: key.focus), generation: generation)
        }
        switch attachment {
        case .refused:
            return false
        case .coalesced:
            state.metrics.coalesced += 1
        case .queued:
            break
        case .parked(let generation):
            state.metrics.parkedJobs += 1
            DeadlineTimers.shared.schedule(afterSeconds: configuration.flingDebounceSeconds) { [weak self] in
                self?.unpark(digest: key.digest, generation: generation)
            }
        }
        return true
    }

    /// The debounce is over: a parked job that someone still waits for joins the queue.
    func unpark(digest: String, generation: UInt64) {
        state.withLock { state in
            if state.jobs.unpark(digest: digest, generation: generation) { handOutWork(&state) }
        }
    }
}
