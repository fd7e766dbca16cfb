import ThumbImaging

/// A store of rendered thumbnails by key. The memory and disk caches both have this ability;
/// the pipeline composes them, and tests substitute their own.
package protocol ThumbnailCaching: AnyObject, Sendable {
    /// The thumbnail for `key`, or nil. A hit counts as a use for eviction.
    func thumbnail(for key: CacheKey) -> CachedThumbnail?
    /// Stores `thumbnail`, already rendered and carrying its final `filePath`.
    func insert(_ thumbnail: CachedThumbnail) throws(CacheError)
    /// Drops every thumbnail of the asset at `assetPath` (relative to the asset root).
    func removeThumbnails(ofAsset assetPath: String)
}

/// A cache that cannot do what was asked (the disk is full, the index is unwritable).
package struct CacheError: Error, Equatable, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        case failed
        /// Another process holds the cache folder's lock (refused: one process per cache).
        case inUse
        /// The disk (or the cache's filesystem) is full: ENOSPC or EDQUOT.
        case diskFull
    }

    package var operation: String
    package var reason: String
    package var kind: Kind

    package init(operation: String, reason: String, kind: Kind = .failed) {
        self.operation = operation
        self.reason = reason
        self.kind = kind
    }

    package var description: String { "\(operation): \(reason)" }
}
