import Synchronization
import ThumbImaging
import ThumbSystem

/// The hottest encoded thumbnails, least recently used first out, under a byte budget.
///
/// - The budget counts what an entry really costs, not only its thumbnail's bytes: the key's
///   strings, the table slots, the per-asset index, the array header and malloc's rounding, and
///   what a server keeps to answer it (see `MemoryCache+Accounting`), so that the process grows by
///   about `byteBudget` and not by several times it when thumbnails are small.
/// - A per-asset index (asset path → its entries) lets an event for one asset touch only that
///   asset's entries.
/// - Versions the folder watcher vouches for (see `MemoryCache+Vouches`) let a hit skip the
///   look at the file: no syscall at all while nothing changed there.
package final class MemoryCache: ThumbnailCaching {
    let state = Mutex(State())
    /// Moves (under the lock) whenever vouches are dropped. A request reads it before it resolves
    /// an asset and may vouch for what it found only if it has not moved since.
    let vouchGeneration = Atomic<UInt64>(0)
    /// Budget, bytes of memory (thumbnails and their overhead, see `statistics`).
    package let byteBudget: Int

    /// What the budget counts for a server's use of an entry's `CachedThumbnail.serving`: a
    /// server that keeps more there lets the process outgrow the budget.
    package static var servingReserveBytes: Int { Accounting.servingReserveBytes }

    package init(byteBudget: Int) {
        self.byteBudget = max(0, byteBudget)
    }

    package func thumbnail(for key: CacheKey) -> CachedThumbnail? {
        state.withLock { state in
            guard let slot = state.index[key.digest], let thumbnail = state.slots[Int(slot)].thumbnail,
                  thumbnail.key == key else { return nil }
            state.touch(slot)
            return thumbnail
        }
    }

    package func insert(_ thumbnail: CachedThumbnail) {
        let cost = Accounting.entryBytes(of: thumbnail)
        // An entry that alone would fill the budget is not kept (it would evict everything).
        guard cost <= byteBudget else { return }
        state.withLock { state in
            state.insert(thumbnail, countedBytes: cost)
            state.evict(toFit: byteBudget)
        }
    }

    /// Drops the asset's entries (and its vouch): work in proportion to that asset's entries.
    package func removeThumbnails(ofAsset assetPath: String) {
        state.withLock { state in
            state.removeAsset(assetPath)
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// Bytes counted against the budget (thumbnails and their overhead) and entries held.
    package var statistics: (bytes: Int, entries: Int) {
        state.withLock { ($0.countedBytes, $0.index.count) }
    }

    /// Entries held for `assetPath` (tests and diagnostics).
    func entryCount(ofAsset assetPath: String) -> Int {
        state.withLock { $0.records[ExactPath(assetPath)]?.slots.count ?? 0 }
    }

    /// Slots looked at by `removeThumbnails` since the cache was made (tests: an event touches
    /// only its own asset's entries).
    var slotsVisitedByRemovals: Int { state.withLock { $0.slotsVisitedByRemovals } }
}
