package import ThumbImaging
import ThumbSystem

/// Cache administration while serving (`GET /v1/cache/stats`, `DELETE /v1/cache`): the disk
/// purge and the memory cache agree at once. A render of a purged asset that was running stores
/// its thumbnail afterwards, as if it had been asked after the purge.
extension ThumbnailPipeline {
    /// The index's counts, and the memory cache's.
    package var detailedCacheStatistics: (disk: CacheStatistics, memory: (bytes: Int, entries: Int)) {
        (stores.index.detailedStatistics, memory.statistics)
    }

    /// The thumbnails, placeholder and failure record of the asset at `assetPath` (as the index
    /// keys it: the path under the asset folder), on disk and in memory.
    package func purgeCache(asset assetPath: String, keepingFailures: Bool = false) -> CachePurge {
        let purge = stores.thumbnails.removeThumbnails(ofAssets: [assetPath], keepingFailures: keepingFailures)
        memory.removeThumbnails(ofAsset: assetPath)
        return purge
    }

    /// The same for every asset under `folder`.
    package func purgeCache(under folder: String, keepingFailures: Bool = false) -> CachePurge {
        let purge = stores.thumbnails.purge(under: folder, keepingFailures: keepingFailures)
        for path in purge.assetPaths { memory.removeThumbnails(ofAsset: path.text) }
        return purge
    }

    /// Every thumbnail of `kind` (all encodings; all scales, or `scale` only), on disk and in
    /// memory (where the assets it touched lose all their thumbnails: memory refills from disk
    /// on the next hit).
    package func purgeCache(kind: SlotKind, scale: Int? = nil) -> CachePurge {
        let purge = stores.thumbnails.purge(kindMarker: CacheKey.kindMarker(kind), scale: scale)
        for path in purge.assetPaths { memory.removeThumbnails(ofAsset: path.text) }
        return purge
    }
}
