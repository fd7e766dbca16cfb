import ThumbImaging

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
    /// drops theirs.
    package var assetPaths: Set<String> = []

    package init(entries: Int = 0, bytes: Int = 0, assetPaths: Set<String> = []) {
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

extension DiskCache {
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

extension DiskCache {
    /// Rows a purge by kind reads under one hold of the cache's lock. Measured on an index of a
    /// million rows (the walk's query, from Python's sqlite3): 512 rows take about 1.8 ms (p99
    /// 2.8 ms), 2048 about 7 ms; with the deletes of the rows that match, a render that stores or
    /// looks up a thumbnail waits a few milliseconds at most, however big the index.
    static let kindPurgeBatchRows = 512

    /// Drops the thumbnails of one kind (every encoding; every scale, or `scale` only), found by
    /// `marker` (`CacheKey.kindMarker`) in their descriptors after the asset's part. The index
    /// has no column to look a kind up by, so this walks every row, in digest order, `batchRows`
    /// (512 unless a test says) at a time, each batch one transaction under one hold of the
    /// lock. A thumbnail of the kind stored while the walk runs stays if its digest sorts before
    /// the walk's position: it was rendered after the purge was asked, as a render that was
    /// running when it was asked is.
    package func purge(kindMarker marker: String, scale: Int? = nil, batchRows: Int? = nil) -> CachePurge {
        guard !marker.isEmpty else { return CachePurge() }
        var total = CachePurge()
        var position = ""
        while true {
            let batch = purgeBatch(kindMarker: marker, scale: scale, after: position, rows: max(1, batchRows ?? Self.kindPurgeBatchRows))
            total.entries += batch.purge.entries
            total.bytes += batch.purge.bytes
            total.assetPaths.formUnion(batch.purge.assetPaths)
            guard let next = batch.nextPosition else { return total }
            position = next
        }
    }

    /// One batch of `purge(kindMarker:)`: up to `rows` rows whose digests sort after `position`;
    /// the last digest read, unless the walk has reached the end.
    private func purgeBatch(kindMarker marker: String, scale: Int?, after position: String, rows: Int) -> (purge: CachePurge, nextPosition: String?) {
        state.withLock { (state: inout State) -> (purge: CachePurge, nextPosition: String?) in
            guard let database = state.database else { return (CachePurge(), nil) }
            var digests: [String] = []
            var paths: Set<String> = []
            var files: [(relative: String, size: Int)] = []
            var read = 0
            var last = position
            let versionPart = "v\(CacheKey.pipelineVersion)|".utf8.count
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    let query = """
                        SELECT digest, instr(descriptor, ?) > 0, descriptor, asset_path, file_path, bytes
                        FROM entries WHERE digest > ? ORDER BY digest LIMIT ?
                        """
                    try database.query(query, [.text(marker), .text(position), .integer(Int64(rows))]) { row in
                        read += 1
                        last = row.text(0)
                        guard row.int(1) != 0 else { return }
                        // The last occurrence must lie past the asset's path, which may hold any text.
                        let descriptor = row.text(2)
                        guard let found = descriptor.range(of: marker, options: .backwards),
                              descriptor.utf8.distance(from: descriptor.startIndex, to: found.lowerBound)
                                >= versionPart + row.text(3).utf8.count else { return }
                        // The scale follows the kind's part: "…|@3|jpeg|…".
                        if let scale, !descriptor[found.lowerBound...].contains("|@\(scale)|") { return }
                        digests.append(last)
                        paths.insert(row.text(3))
                        files.append((row.text(4), row.int(5)))
                    }
                    for digest in digests { try database.execute("DELETE FROM entries WHERE digest = ?", [.text(digest)]) }
                }
                if !digests.isEmpty { state.removalTransactions += 1 }
            } catch {
                recover(from: error, &state)
                return (CachePurge(), nil)
            }
            return (retire(files, of: paths, &state), read < rows ? nil : last)
        }
    }
}
