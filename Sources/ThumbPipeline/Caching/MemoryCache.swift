import Synchronization

/// The hottest encoded thumbnails, least recently used first out, under a byte budget.
public final class MemoryCache: ThumbnailCaching {
    private struct Entry {
        var thumbnail: CachedThumbnail
        var previous: String?
        var next: String?
    }

    /// A doubly linked use order threaded through a dictionary: O(1) hit, insert and evict.
    private struct State {
        var entries: [String: Entry] = [:]
        var newest: String?
        var oldest: String?
        var bytes = 0

        mutating func unlink(_ digest: String) {
            guard let entry = entries[digest] else { return }
            if let previous = entry.previous { entries[previous]?.next = entry.next } else { newest = entry.next }
            if let next = entry.next { entries[next]?.previous = entry.previous } else { oldest = entry.previous }
            entries[digest]?.previous = nil
            entries[digest]?.next = nil
        }

        mutating func pushNewest(_ digest: String) {
            entries[digest]?.next = newest
            entries[digest]?.previous = nil
            if let newest { entries[newest]?.previous = digest }
            newest = digest
            if oldest == nil { oldest = digest }
        }

        mutating func remove(_ digest: String) {
            unlink(digest)
            if let entry = entries.removeValue(forKey: digest) { bytes -= entry.thumbnail.bytes.count }
        }
    }

    private let state = Mutex(State())
    /// Budget, bytes of encoded thumbnails.
    public let byteBudget: Int

    public init(byteBudget: Int) {
        self.byteBudget = byteBudget
    }

    public func thumbnail(for key: CacheKey) -> CachedThumbnail? {
        state.withLock { state in
            guard let entry = state.entries[key.digest], entry.thumbnail.key == key else { return nil }
            state.unlink(key.digest)
            state.pushNewest(key.digest)
            return entry.thumbnail
        }
    }

    public func insert(_ thumbnail: CachedThumbnail) {
        let size = thumbnail.bytes.count
        guard size <= byteBudget else { return }
        state.withLock { state in
            state.remove(thumbnail.key.digest)
            state.entries[thumbnail.key.digest] = Entry(thumbnail: thumbnail)
            state.pushNewest(thumbnail.key.digest)
            state.bytes += size
            while state.bytes > byteBudget, let oldest = state.oldest { state.remove(oldest) }
        }
    }

    public func removeThumbnails(ofAsset assetPath: String) {
        state.withLock { state in
            for digest in state.entries.filter({ $0.value.thumbnail.key.assetPath == assetPath }).map(\.key) {
                state.remove(digest)
            }
        }
    }

    /// Bytes and entries held.
    public var statistics: (bytes: Int, entries: Int) {
        state.withLock { ($0.bytes, $0.entries.count) }
    }
}
