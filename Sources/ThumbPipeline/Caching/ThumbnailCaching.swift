import ThumbImaging

/// A store of rendered thumbnails by key: what the memory cache and the cache folder's
/// `ThumbnailStore` have in common (the pipeline composes the two concrete types: eviction,
/// vouching, purges and the background rewrite are each one's own).
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
