import ThumbImaging
import ThumbSystem

extension ThumbnailPipeline {
    /// In-process: reads and decodes on this thread (`sandbox: false`).
    func render(_ jobs: [RenderJob]) -> [Result<CachedThumbnail, ThumbFailure>] {
        let first = jobs[0]
        // The shared decode stops only when every job of the group is cancelled.
        if jobs.allSatisfy(\.isCancelled) { return jobs.map { _ in .failure(.cancelled) } }
        let source: SourceBytes
        switch readSource(first.asset) {
        case .success(let bytes): source = bytes
        case .failure(let failure): return jobs.map { _ in .failure(failure) }
        }
        // The file may have changed since the requests were keyed: key what was actually read.
        var asset = first.asset
        if let status = source.fileStatus,
           status.size != asset.size || status.modifiedNanoseconds != asset.modifiedNanoseconds || status.inode != asset.inode {
            asset = AssetVersion(path: asset.path, size: status.size, modifiedNanoseconds: status.modifiedNanoseconds,
                                 inode: status.inode, device: status.device)
        }
        let hook = checkpointHook
        let thumbnails: [Thumbnail]
        let order = decodeOrder(jobs, of: asset)
        do {
            let rendered = try thumbnailer.thumbnailSet(of: source, requests: order.requests,
                                                        placeholder: order.placeholder) {
                hook?()
                return jobs.allSatisfy(\.isCancelled)
            }
            for job in jobs { job.noteDecodeStopped() }
            thumbnails = rendered.thumbnails
            keep(rendered.placeholder, placements: rendered.placements, of: asset)
        } catch {
            let failure = ThumbFailure(error)
            if let record = failure.disposition.negativeRecord { disk.recordFailure(asset, record: record, reason: failure.reason) }
            return jobs.map { _ in .failure(failure) }
        }
        return store(thumbnails, of: asset, for: jobs)
    }

    /// Opens the asset beneath the root (the path was resolved at submit; whatever is there now
    /// is what counts) and reads it from that one descriptor. A file written while it is read is
    /// read once more; twice changing is `assetChanging` (a transient conflict, not a refusal).
    func readSource(_ asset: AssetVersion) -> Result<SourceBytes, ThumbFailure> {
        var change = ""
        for _ in 0..<2 {
            let file: AssetFile
            do {
                file = try assets.openForReading(asset.path)
            } catch {
                return .failure(ThumbFailure(error))
            }
            sourceOpenedHook?(file.version)
            do {
                return .success(try file.readAll(maxBytes: configuration.limits.maxFileBytes))
            } catch {
                switch error {
                case .tooLarge(let reason):
                    let failure = ThumbFailure.tooLarge(reason: reason)
                    if let record = failure.disposition.negativeRecord { disk.recordFailure(file.version, record: record, reason: reason) }
                    return .failure(failure)
                case .changed(let reason):
                    change = reason
                case .unreadable(let reason):
                    return .failure(.unreadable(path: asset.path, reason: reason))
                }
            }
        }
        return .failure(.assetChanging(path: asset.path, reason: change))
    }

    func store(_ thumbnails: [Thumbnail], of asset: AssetVersion, for jobs: [RenderJob]) -> [Result<CachedThumbnail, ThumbFailure>] {
        zip(jobs, thumbnails).map { job, thumbnail in .success(store(thumbnail, of: asset, for: job)) }
    }

    /// Keys what was rendered by the version that was read, and stores it in both caches.
    func store(_ thumbnail: Thumbnail, of asset: AssetVersion, for job: RenderJob) -> CachedThumbnail {
        let key = asset == job.asset ? job.key
            : CacheKey(asset: asset, kind: job.request.kind, scale: job.request.scale, encoder: job.request.encoder, focus: job.request.focus)
        var cached = CachedThumbnail(key: key, bytes: thumbnail.bytes,
                                     filePath: disk.filePath(for: key, format: thumbnail.format),
                                     format: thumbnail.format, width: thumbnail.width, height: thumbnail.height, crop: thumbnail.crop)
        // A cache that cannot store (folder removed, disk full: the disk cache repairs what it
        // can and logs the episode) still lets this answer go out, from memory, marked unstored.
        cached.isStored = (try? disk.insert(cached)) != nil
        memory.insert(cached)
        return cached
    }
}
