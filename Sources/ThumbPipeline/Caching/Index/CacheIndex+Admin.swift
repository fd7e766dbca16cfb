import ThumbImaging
package import ThumbSystem

/// What operators ask of a cache, from the daemon (`GET /v1/cache/stats`, `DELETE /v1/cache`)
/// or without one (`thumbd cache stats|purge|verify`): its contents counted, thumbnails removed
/// by asset or folder, and its files checked against its index.
package struct CacheStatistics: Sendable, Equatable {
    /// Thumbnails indexed, and their bytes.
    package var entries = 0
    package var bytes = 0
    /// The budget the cache evicts to (`cache.diskBytes`).
    package var budgetBytes = 0
    /// Distinct assets with a thumbnail.
    package var assets = 0
    /// Asset versions with a placeholder, remembered failures, pre-renders waiting, focus points.
    package var placeholders = 0
    package var failures = 0
    package var backlog = 0
    package var focusPoints = 0
}

/// What a purge removed.
package struct CachePurge: Sendable, Equatable {
    package var entries = 0
    package var bytes = 0
    /// The assets it was asked to clear (and, for a folder, those it found): the memory cache
    /// drops theirs. As bytes: NFC and NFD twins are two assets, and each loses its entries.
    package var assetPaths: Set<ExactPath> = []

    package init(entries: Int = 0, bytes: Int = 0, assetPaths: Set<ExactPath> = []) {
        self.entries = entries
        self.bytes = bytes
        self.assetPaths = assetPaths
    }
}

/// What a verification found and mended.
package struct CacheVerification: Sendable, Equatable {
    /// Files no row named (orphans of a crash, strays), removed.
    package var filesRemoved = 0
    package var fileBytesRemoved = 0
    /// Rows whose file was missing, of another size or misnamed, removed (rendered again when asked).
    package var rowsRemoved = 0
    /// What the cache holds afterwards.
    package var entries = 0
    package var bytes = 0
}

extension CacheIndex {
    /// Counts, from the index (one query each, under the lock).
    package var detailedStatistics: CacheStatistics {
        state.withLock { (state: inout State) -> CacheStatistics in
            var statistics = CacheStatistics(entries: state.entryCount, bytes: state.totalBytes, budgetBytes: byteBudget)
            guard let database = state.database else { return statistics }
            func count(_ sql: String) -> Int { Int((try? database.scalar(sql)) ?? 0) }
            statistics.assets = count("SELECT count(DISTINCT asset_path) FROM entries")
            statistics.placeholders = count("SELECT count(*) FROM placeholders")
            statistics.failures = count("SELECT count(*) FROM failures")
            statistics.backlog = count("SELECT count(*) FROM backlog")
            statistics.focusPoints = count("SELECT count(*) FROM focus")
            return statistics
        }
    }

    /// Waits until the files of removed rows are unlinked (they leave under the lock and are
    /// unlinked in the background): for a command that purges and exits.
    package func waitForRemovals() { reaper.waitUntilReaped() }

    /// Every file checked against the index, shard by shard, and every disagreement mended (see
    /// `reconcileFiles`); nil when the index failed meanwhile.
    package func verify() -> CacheVerification? {
        guard let dropped = reconcileFiles() else { return nil }
        let totals = statistics
        return CacheVerification(filesRemoved: dropped.files, fileBytesRemoved: dropped.fileBytes, rowsRemoved: dropped.rows,
                                 entries: totals.entries, bytes: totals.bytes)
    }
}
