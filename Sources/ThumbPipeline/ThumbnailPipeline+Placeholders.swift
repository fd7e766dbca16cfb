import ThumbImaging

/// The pipeline as the placeholder look-up's renderer (`AssetPlaceholders`).
extension ThumbnailPipeline: PlaceholderRendering {
    func queuePlaceholderRenders(_ assets: [(absolutePath: String, version: AssetVersion)], kind: SlotKind, scale: Int,
                                 priority: Priority, format: EncoderSettings.Format?) {
        let encoder = configuration.encoder(for: kind, format: format)
        // The keys a request would form (a focus kind's with the asset's focus), so that the
        // thumbnail each decode stores is one a later request finds.
        let keyed = assets.map { (resolved: $0, key: cacheKey(asset: $0.version, kind: kind, scale: scale, encoder: encoder)) }
        state.withLock { state in
            guard !state.shuttingDown else { return }
            defer { handOutWork(&state) }
            for (resolved, key) in keyed {
                // A job of this thumbnail is on its way: its decode is to compute the placeholder
                // (and a client polling a pending screen adds no waiter each time).
                if state.jobs[key.digest] != nil {
                    state.jobs.wantPlaceholder(fromJob: key.digest)
                    continue
                }
                let waiter = Waiter(id: state.jobs.makeID(), slot: nil, token: nil, priority: priority, completion: nil,
                                    wantsPlaceholder: true)
                _ = attach(waiter, key: key, resolved: resolved, kind: kind, scale: scale, encoder: encoder, parks: false, in: &state)
            }
        }
    }
}
