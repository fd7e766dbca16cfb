#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbSystem

/// Reconciling the files with the index, one shard folder at a time, while the cache serves:
/// a shard is listed outside the lock, its rows are read in batches under it, and every
/// disagreement is checked again under the lock before anything is removed (a row or a file
/// may have come or gone since the listing; an insert renames its file and indexes it in one
/// hold of the lock, so under the lock "a file without a row" is an orphan). Memory is one
/// shard's listing and one batch of rows, whatever the size of the cache.
///
/// Removed: temporary files of another process (this folder is flocked, so that one is gone),
/// files without a row, rows without their file (or whose file has another size, or another
/// name than the digest gives). A look-up that meets a row whose file is gone drops it and
/// misses (the thumbnail is rendered again), so serving before this has run is safe.
extension CacheIndex {
    /// How far a reconcile of the files has come.
    package struct FileReconcileProgress: Sendable, Equatable {
        /// Shard folders done, of `shardCount`.
        package var shardsDone = 0
        /// Index rows checked, of about `rowsAtStart` (the count when it started).
        package var rowsChecked = 0
        package var rowsAtStart = 0
        /// The most rows read in one hold of the lock (at most `reconcileBatchRows`).
        package var largestRowBatch = 0
        package static let shardCount = 256
    }

    /// Rows read per hold of the lock.
    static let reconcileBatchRows = 512

    /// Reconciles every shard; between batches it releases the lock and asks `shouldStop`. Logs
    /// what it removed (at notice), or, when the index was rebuilt at open, the one warning that
    /// says so with the files it cost. Nil when stopped (or the index failed meanwhile).
    @discardableResult
    func reconcileFiles(shouldStop: () -> Bool = { false },
                        progress: (FileReconcileProgress) -> Void = { _ in }) -> Dropped? {
        var report = FileReconcileProgress(rowsAtStart: statistics.entries)
        var dropped = Dropped()
        for shardIndex in 0..<FileReconcileProgress.shardCount {
            if shouldStop() { return nil }
            let ok = reconcileShard(shardIndex, &dropped, &report, recovers: true) { body in
                state.withLock { body(&$0) }
            } shouldStop: { shouldStop() }
            guard ok else { return nil }
            report.shardsDone += 1
            progress(report)
        }
        state.withLock { reportReconciled(dropped, &$0) }
        return dropped
    }

    /// The same, inside one hold of the lock (after the index was rebuilt mid-run).
    func reconcileFilesLocked(_ state: inout State) {
        var report = FileReconcileProgress()
        var dropped = Dropped()
        for shardIndex in 0..<FileReconcileProgress.shardCount {
            // No recovery from here: this runs inside one (a damaged fresh index stays as it is).
            guard reconcileShard(shardIndex, &dropped, &report, recovers: false, access: { body in body(&state) },
                                 shouldStop: { false }) else { return }
        }
        reportReconciled(dropped, &state)
    }

    /// The log line of a finished reconcile.
    private func reportReconciled(_ dropped: Dropped, _ state: inout State) {
        let indexPath = directory + "/" + Self.indexName
        if let damage = state.unusableIndex {
            state.unusableIndex = nil
            log.warning("cache index \(indexPath) was unusable (\(damage)): moved aside to \(Self.indexName).broken and rebuilt empty; "
                        + "dropped \(dropped.files) thumbnail files (\(dropped.fileBytes) bytes) it no longer indexed")
        } else if dropped.files > 0 || dropped.rows > 0 {
            // After a crash: a few orphans, normal, but worth a line.
            log.notice("cache \(directory) reconciled with its index: removed \(dropped.files) files without a row "
                       + "(\(dropped.fileBytes) bytes) and \(dropped.rows) rows without their file")
        }
    }

    /// One shard: its files listed, its rows read batch by batch through `access` (which holds
    /// the lock), then the files no row claimed. False when the index failed or `shouldStop`.
    private func reconcileShard(_ index: Int, _ dropped: inout Dropped, _ report: inout FileReconcileProgress, recovers: Bool,
                                access: ((inout State) -> Void) -> Void, shouldStop: () -> Bool) -> Bool {
        let shard = Self.shardName(index)
        var listing = Self.listShard(directory + "/" + shard)
        // Digests of shard i lie in [name(i), name(i + 1)); the first range has no lower bound
        // and the last no upper one, so that a row of any digest is visited once.
        let lower = index == 0 ? "" : shard
        let upper = index + 1 < FileReconcileProgress.shardCount ? Self.shardName(index + 1) : nil
        var after: String?
        var failed = false
        while !failed {
            if shouldStop() { return false }
            var more = false
            access { state in
                do throws(SQLiteError) {
                    let batch = try Self.rowBatch(state, from: after ?? lower, upTo: upper, skipping: after)
                    more = batch.count >= Self.reconcileBatchRows
                    after = batch.last?.digest ?? after
                    report.rowsChecked += batch.count
                    report.largestRowBatch = max(report.largestRowBatch, batch.count)
                    try checkRows(batch, shard: shard, &listing, &dropped, &state)
                } catch {
                    failed = true
                    if recovers { recover(from: error, &state) }
                }
            }
            if !more { break }
        }
        if failed { return false }
        // Files no row claimed, checked again under the lock in batches.
        let unclaimed = listing.filter { $0.value.claimed == false }.map(\.key)
        var start = 0
        while start < unclaimed.count && !failed {
            let names = unclaimed[start..<min(unclaimed.count, start + Self.reconcileBatchRows)]
            start += names.count
            access { state in
                do throws(SQLiteError) {
                    try removeOrphans(names, shard: shard, &dropped, &state)
                } catch {
                    failed = true
                    if recovers { recover(from: error, &state) }
                }
            }
        }
        return !failed
    }

    /// A row of the index, as the reconcile reads it.
    private struct IndexedFile {
        var digest: String
        var relative: String
        var size: Int
        var format: String
    }

    /// Up to a batch of rows with digest ≥ `from` (and < `upTo`), in digest order, without `skipping`.
    private static func rowBatch(_ state: State, from: String, upTo: String?, skipping: String?) throws(SQLiteError) -> [IndexedFile] {
        guard let database = state.database else {
            throw SQLiteError(operation: "reconcile", code: 21, message: "the cache is closed")
        }
        var rows: [IndexedFile] = []
        let read = { (row: SQLiteRow) in
            let digest = row.text(0)
            if digest != skipping { rows.append(IndexedFile(digest: digest, relative: row.text(1), size: row.int(2), format: row.text(3))) }
        }
        let limit = SQLiteValue.integer(Int64(reconcileBatchRows + 1))
        if let upTo {
            try database.query("SELECT digest, file_path, bytes, format FROM entries WHERE digest >= ? AND digest < ? ORDER BY digest LIMIT ?",
                               [.text(from), .text(upTo), limit], read)
        } else {
            try database.query("SELECT digest, file_path, bytes, format FROM entries WHERE digest >= ? ORDER BY digest LIMIT ?",
                               [.text(from), limit], read)
        }
        if rows.count > reconcileBatchRows { rows.removeLast(rows.count - reconcileBatchRows) }
        return rows
    }

    /// Under the lock: a row whose file the listing has at its size claims it; any other row is
    /// looked at again (its file may have been written since the listing) and dropped when its
    /// file is really gone or wrong, or when the row itself is malformed.
    private func checkRows(_ rows: [IndexedFile], shard: String, _ listing: inout [String: ListedFile],
                           _ dropped: inout Dropped, _ state: inout State) throws(SQLiteError) {
        for row in rows {
            let valid = Self.isDigest(row.digest) && ImageFormat(rawValue: row.format).map {
                row.relative == Self.relativePath(digest: row.digest, format: $0)
            } == true
            if valid, row.relative.hasPrefix(shard + "/") {
                let name = String(row.relative.dropFirst(shard.utf8.count + 1))
                if let listed = listing[name], listed.size == row.size {
                    listing[name]?.claimed = true
                    continue
                }
                if CacheFiles.regularFileSize(directory + "/" + row.relative) == row.size {
                    listing[name]?.claimed = true  // Written since the listing.
                    continue
                }
            }
            // Gone, resized, misnamed or malformed: the row goes (and a file at a valid name with
            // it; a file it does not name is judged as a file).
            try deleteRow(digest: row.digest, &state)
            if valid {
                let path = directory + "/" + row.relative
                if let size = CacheFiles.regularFileSize(path) {
                    dropped.files += 1
                    dropped.fileBytes += size
                }
                CacheFiles.remove(path)
                if let name = row.relative.split(separator: "/").last { listing[String(name)] = nil }
            }
            state.totalBytes -= row.size
            state.entryCount -= 1
            dropped.rows += 1
        }
    }

    private func deleteRow(digest: String, _ state: inout State) throws(SQLiteError) {
        guard let database = state.database else { return }
        try database.execute("DELETE FROM entries WHERE digest = ?", [.text(digest)])
    }

    /// Under the lock: each name no row claimed is removed unless a row for it has appeared (at
    /// its current size) or it is a temporary file of this process (a write under way).
    private func removeOrphans(_ names: ArraySlice<String>, shard: String, _ dropped: inout Dropped,
                               _ state: inout State) throws(SQLiteError) {
        guard let database = state.database else { return }
        let ownTemporary = ".tmp-\(getpid())-"
        for name in names {
            if name.contains(ownTemporary) { continue }
            let relative = shard + "/" + name
            let size = CacheFiles.regularFileSize(directory + "/" + relative)
            if let digest = name.split(separator: ".", maxSplits: 1).first.map(String.init), Self.isDigest(digest) {
                var indexed: (relative: String, size: Int)?
                try database.query("SELECT file_path, bytes FROM entries WHERE digest = ?", [.text(digest)]) { indexed = ($0.text(0), $0.int(1)) }
                if let indexed, indexed.relative == relative, indexed.size == size { continue }
            }
            // A temporary file of a process that died, an orphan (a crash between rename and
            // insert), a file whose row says another size, or a stranger.
            CacheFiles.remove(directory + "/" + relative)
            dropped.files += 1
            dropped.fileBytes += size ?? 0
        }
    }

    /// A file of a shard folder: its size (nil: not a regular file) and whether a row claimed it.
    struct ListedFile {
        var size: Int?
        var claimed = false
    }

    /// The names in a shard folder with their sizes (fstatat beside the listing, not following
    /// links); empty when it is not a folder.
    static func listShard(_ path: String) -> [String: ListedFile] {
        guard CacheFiles.isDirectory(path), let names = try? CacheFiles.names(in: path),
              let folder = try? systemCall("open \(path)", { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }) else { return [:] }
        defer { Glibc.close(folder) }
        var listing: [String: ListedFile] = [:]
        listing.reserveCapacity(names.count)
        for name in names {
            var status = stat()
            let found = (try? systemCall("lstat \(path)/\(name)", { fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) })) != nil
            listing[name] = ListedFile(size: found && (status.st_mode & S_IFMT) == S_IFREG ? Int(status.st_size) : nil)
        }
        return listing
    }

    /// Up to `limit` distinct assets (relative paths) that are listed or have thumbnails or a
    /// failure, after `after` in byte order: the index's side of the asset reconcile, read batch
    /// by batch through the tables' path indexes (never the whole set at once).
    func indexedAssetPaths(after: String, limit: Int) -> [String] {
        state.withLock { (state: inout State) -> [String] in
            guard let database = state.database, limit > 0 else { return [] }
            var runs: [[String]] = []
            do throws(SQLiteError) {
                for sql in ["SELECT DISTINCT asset_path FROM entries WHERE asset_path > ? ORDER BY asset_path LIMIT ?",
                            "SELECT asset_path FROM failures WHERE asset_path > ? ORDER BY asset_path LIMIT ?",
                            "SELECT asset_path FROM assets WHERE asset_path > ? ORDER BY asset_path LIMIT ?"] {
                    var run: [String] = []
                    try database.query(sql, [.text(after), .integer(Int64(limit))]) { run.append($0.text(0)) }
                    runs.append(run)
                }
            } catch {
                recover(from: error, &state)
                return []
            }
            // The first `limit` of the union are among the first `limit` of each run.
            var merged: [String] = []
            var positions = [Int](repeating: 0, count: runs.count)
            while merged.count < limit {
                var smallest: Int?
                for (run, position) in zip(runs.indices, positions) where position < runs[run].count {
                    if let best = smallest, !Self.precedes(runs[run][position], runs[best][positions[best]]) { continue }
                    smallest = run
                }
                guard let chosen = smallest else { break }
                let next = runs[chosen][positions[chosen]]
                positions[chosen] += 1
                if merged.last != next { merged.append(next) }
            }
            return merged
        }
    }

    /// SQLite's order for TEXT (BINARY collation): the UTF-8 bytes, compared as unsigned.
    static func precedes(_ left: String, _ right: String) -> Bool {
        left.utf8.lexicographicallyPrecedes(right.utf8)
    }

    /// "00" … "ff".
    static func shardName(_ index: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[(index >> 4) & 15], digits[index & 15]], as: UTF8.self)
    }
}
