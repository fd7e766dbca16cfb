import Synchronization

/// Where a server keeps what it built to answer with a thumbnail (a prepared HTTP response and
/// its header lines), made at the first answer and reused by every later one instead of being
/// formatted and copied per request. Copies of a `CachedThumbnail` share it, so it lives as long
/// as the memory cache's entry (or an answer still being sent); `MemoryCache` counts
/// `MemoryCache.servingReserveBytes` for it.
package final class ServingAttachment: @unchecked Sendable {
    // @unchecked: the one stored object is set once (atomically) and is Sendable by `value`'s signature.
    private let stored = AtomicLazyReference<AnyObject>()

    /// An instance's own bytes (object header and the reference).
    static let instanceBytes = 16 + MemoryLayout<AtomicLazyReference<AnyObject>>.size

    package init() {}

    /// The object kept here, made by `make` on first use (if two threads race, both make one and
    /// one is kept: `make` must have no effect beyond its result). Nil when a different type of
    /// object is kept.
    package func value<Value: AnyObject & Sendable>(orMake make: () -> Value) -> Value? {
        if let existing = stored.load() { return existing as? Value }
        return stored.storeIfNil(make()) as? Value
    }
}
