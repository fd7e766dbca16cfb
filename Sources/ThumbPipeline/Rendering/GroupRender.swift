import ThumbImaging
import ThumbSystem
import ThumbWorker

/// One decode of a group, from the open to the caches, the same for every renderer: the asset
/// is opened beneath the root (whatever is there now is what counts, and the thumbnails are
/// keyed by the version that was opened), rendered, opened and rendered once more if it changed
/// meanwhile (twice changing is `assetChanging`, a transient conflict, not a refusal); what was
/// rendered goes to both caches, a failure the table remembers is recorded once per file, and
/// the placeholder and attention placements the decode learnt go to the index.
struct GroupRender: Sendable {
    let opener: any AssetOpening
    let stores: CacheStores
    let memory: MemoryCache
    /// What a background decode places beside its own requests (`PipelineConfiguration.attentionPlaced`).
    var attentionPlaced: [(kind: SlotKind, scale: Int)] = []

    struct Result {
        var outcomes: [Swift.Result<CachedThumbnail, ThumbFailure>]
        /// CPU the renderer spent beyond the render thread's (a worker process's).
        var rendererCPUSeconds = 0.0
        var computedPlaceholder = false
        /// What the decode found the source to be (for `PipelineMetrics.decodesBySourceFormat`).
        var sourceFormat: SourceFormat?
    }

    func run(_ group: RenderGroup, on renderer: any ThumbnailRendering) -> Result {
        let jobs = group.jobs
        let path = jobs[0].asset.path
        func all(_ failure: ThumbFailure, _ cpuSeconds: Double) -> Result {
            Result(outcomes: jobs.map { _ in .failure(failure) }, rendererCPUSeconds: cpuSeconds)
        }
        // The shared decode stops only when every job of the group is cancelled.
        if group.isCancelled { return all(.cancelled, 0) }
        let isCancelled: @Sendable () -> Bool = { group.isCancelled }
        var cpuSeconds = 0.0
        var change = ""
        for _ in 0..<2 {
            let file: AssetFile
            do {
                file = try opener.openForReading(path)
            } catch {
                return all(ThumbFailure(error), cpuSeconds)
            }
            let version = file.version
            for job in jobs { job.whenCancelled { if isCancelled() { renderer.cancelCurrentRender() } } }
            let order = decodeOrder(group, of: version)
            let attempt = renderer.render(file, requests: order.requests, placeholder: order.placeholder, isCancelled: isCancelled)
            for job in jobs {
                job.whenCancelled(nil)
                job.noteDecodeStopped()
            }
            switch attempt {
            case .changed(let reason, let spent):
                cpuSeconds += spent
                change = reason
            case .failed(let failure, let spent):
                remember(failure, of: version)
                return all(failure, cpuSeconds + spent)
            case .rendered(let results, let placeholder, let placements, let sourceFormat, let spent):
                let computed = keep(placeholder, placements: placements, of: version)
                var remembered = false
                let outcomes = zip(jobs, results).map { job, result -> Swift.Result<CachedThumbnail, ThumbFailure> in
                    switch result {
                    case .success(let thumbnail):
                        return .success(store(thumbnail, of: version, for: job))
                    case .failure(let failure):
                        // One record per file, whichever request found it.
                        if !remembered && failure.disposition.negativeRecord != nil {
                            remember(failure, of: version)
                            remembered = true
                        }
                        return .failure(failure)
                    }
                }
                return Result(outcomes: outcomes, rendererCPUSeconds: cpuSeconds + spent, computedPlaceholder: computed, sourceFormat: sourceFormat)
            }
        }
        return all(.assetChanging(path: path, reason: change), cpuSeconds)
    }

    /// What a decode of `asset` is asked for, from one look-up of its row: the jobs' requests,
    /// each attention crop handed the place an earlier decode of this version found for its
    /// shape (so a JPEG decodes only the crop's columns), and whether to compute the placeholder
    /// (the index has none for this version; at any cost unless a client waits at `.visible`
    /// and nobody asked for it).
    func decodeOrder(_ group: RenderGroup, of asset: AssetVersion) -> (requests: [ThumbnailRequest], placeholder: PlaceholderDemand) {
        let row = stores.placeholders.stored(ofAssets: [asset.path])[ExactPath(asset.path)]
        let current = row?.version == asset.description ? row : nil
        let requests = group.jobs.map { job in
            var request = job.request
            if let shape = request.placementShape, let placement = current?.placements.first(where: { $0.shape == shape }) {
                request.placedCentre = placement.centre
            }
            return request
        }
        let placing = group.placesEveryShape ? requests + unplacedShapes(besides: requests, placed: current?.placements ?? []) : requests
        guard current == nil else { return (placing, .skip) }
        let wanted = group.jobs.contains(where: \.placeholderWanted)
        return (placing, group.clientWaits && !wanted ? .ifWholeFrame : .always)
    }

    /// Requests for the configured attention shapes that neither the index (for this version) nor
    /// `requests` place: their decode reads the whole frame once, here, in the background,
    /// instead of at a client's first request of each. Their thumbnails are not kept (only the
    /// places are), so they are encoded as cheaply as the encoders allow.
    func unplacedShapes(besides requests: [ThumbnailRequest], placed: [AttentionPlacement]) -> [ThumbnailRequest] {
        guard let first = requests.first else { return [] }
        var shapes = Set(placed.map(\.shape)).union(requests.compactMap(\.placementShape))
        var extra: [ThumbnailRequest] = []
        for (kind, scale) in attentionPlaced where requests.count + extra.count < WorkerProtocol.maxRequestsPerOrder {
            let request = ThumbnailRequest(kind: kind, scale: scale, encoder: Self.placingEncoder, appliesOrientation: first.appliesOrientation)
            guard let shape = request.placementShape, shapes.insert(shape).inserted else { continue }
            extra.append(request)
        }
        return extra
    }

    /// The cheapest encoding of a thumbnail made only to place its crop.
    static let placingEncoder: EncoderSettings = {
        var encoder = EncoderSettings()
        encoder.format = .jpeg
        encoder.jpegQuality = 10
        return encoder
    }()

    /// Stores what a decode learnt of the version that was read: its placeholder (the row, with
    /// the decode's placements) or, when the row was there already, the placements it added.
    /// True when it stored a placeholder.
    func keep(_ placeholder: Placeholder?, placements: [AttentionPlacement], of asset: AssetVersion) -> Bool {
        guard let placeholder else {
            stores.placeholders.addPlacements(placements, of: asset)
            return false
        }
        stores.placeholders.store(placeholder, placements: placements, of: asset)
        return true
    }

    /// Keys what was rendered by the version that was read, and stores it in both caches.
    func store(_ thumbnail: Thumbnail, of asset: AssetVersion, for job: RenderJob) -> CachedThumbnail {
        let key = asset == job.asset ? job.key
            : CacheKey(asset: asset, kind: job.request.kind, scale: job.request.scale, encoder: job.request.encoder, focus: job.request.focus)
        var cached = CachedThumbnail(key: key, bytes: thumbnail.bytes,
                                     filePath: stores.thumbnails.filePath(for: key, format: thumbnail.format),
                                     format: thumbnail.format, width: thumbnail.width, height: thumbnail.height, crop: thumbnail.crop)
        // A cache that cannot store (folder removed, disk full: the disk cache repairs what it
        // can and logs the episode) still lets this answer go out, from memory, marked unstored.
        cached.isStored = (try? stores.thumbnails.insert(cached)) != nil
        memory.insert(cached)
        return cached
    }

    func remember(_ failure: ThumbFailure, of version: AssetVersion) {
        if let record = failure.disposition.negativeRecord { stores.failures.recordFailure(version, record: record, reason: failure.reason) }
    }
}
