#if canImport(Glibc)
import Glibc
#endif
import Synchronization
package import ThumbImaging
import ThumbSystem

/// The thumbnails on disk: one file each, a row each in the index (`CacheIndex`), evicted
/// least-recently-used under the index's byte budget. A file appears under its final name only
/// whole (written to a temporary name, fsynced, renamed), and is indexed in the same hold of
/// the index's lock.
///
/// When writes fail (the folder was removed, the disk is full) the index repairs what it can —
/// recreates the folder with a fresh index, evicts to make room and lowers its budget to what
/// the disk holds — and reports the episode once (see `CacheIndex+Health.swift`).
///
/// Thread-safe: every operation on the index holds its lock; writing a new file and reading
/// a hit's bytes happen outside it.
package final class ThumbnailStore: ThumbnailCaching, @unchecked Sendable {
    package let index: CacheIndex
    /// Absolute, symlink-free path of the cache folder.
    package var directory: String { index.directory }
    /// Makes temporary names unique within the process (the pid makes them unique across).
    private let temporaryCounter = Atomic<Int>(0)
    /// Digests being written again in the background (`storeInBackground`).
    let restoring = Mutex<Set<String>>([])
    /// Where `storeInBackground` writes, one thumbnail at a time.
    let rewrites = SerialWorker(name: "thumbd-rewrite")

    package init(index: CacheIndex) {
        self.index = index
    }

    /// Opens an index of its own in `directory` (see `CacheIndex.init`): for a command or a
    /// test that needs only the thumbnails.
    package convenience init(directory: String, byteBudget: Int, log: PipelineLog = .standardError,
                             reconcilesFiles: Bool = true) throws(CacheError) {
        self.init(index: try CacheIndex(directory: directory, byteBudget: byteBudget, log: log, reconcilesFiles: reconcilesFiles))
    }

    /// Bytes and number of the cached thumbnails.
    package var statistics: (bytes: Int, entries: Int) { index.statistics }

    /// Closes its index (see `CacheIndex.close`).
    package func close() {
        index.close()
        rewrites.close(joining: false)
    }

    /// Where the thumbnail for `key` in `format` lives (whether or not it is cached).
    package func filePath(for key: CacheKey, format: ImageFormat) -> String {
        directory + "/" + CacheIndex.relativePath(digest: key.digest, format: format)
    }

    // MARK: - ThumbnailCaching

    package func thumbnail(for key: CacheKey) -> CachedThumbnail? {
        guard CacheIndex.isDigest(key.digest) else { return nil }
        // Under the lock: find the row, open the file (the descriptor keeps this version
        // readable even if it is evicted or replaced meanwhile), count the use.
        let found = index.state.withLock { (state: inout CacheIndex.State) -> (fd: Int32, relative: String, size: Int, format: ImageFormat, width: Int, height: Int,
                                                               crop: CropRectangle?)? in
            guard let database = state.database else { return nil }
            var row: (descriptor: String, relative: String, size: Int, format: String, width: Int, height: Int, crop: CropRectangle?)?
            do throws(SQLiteError) {
                try database.query("SELECT descriptor, file_path, bytes, format, width, height, crop FROM entries WHERE digest = ?",
                                   [.text(key.digest)]) {
                    row = ($0.text(0), $0.text(1), $0.int(2), $0.text(3), $0.int(4), $0.int(5), $0.isNull(6) ? nil : CropRectangle(indexText: $0.text(6)))
                }
            } catch {
                index.recover(from: error, &state)
                return nil
            }
            guard let row, row.descriptor == key.descriptor else { return nil }
            let path = directory + "/" + row.relative
            guard let format = ImageFormat(rawValue: row.format) else {
                index.dropEntry(digest: key.digest, relative: row.relative, &state)
                return nil
            }
            let fd: Int32
            do throws(SystemError) {
                fd = try systemCall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
            } catch {
                // Out of descriptors says nothing about the file; anything else: it is gone
                // (and when the whole folder is, it is recreated now, not at the next write).
                if ![EMFILE, ENFILE, ENOMEM].contains(error.errno) { index.dropEntry(digest: key.digest, relative: row.relative, &state) }
                if error.errno == ENOENT { _ = index.recreateFolderIfGone(&state) }
                return nil
            }
            state.useCounter += 1
            _ = try? database.execute("UPDATE entries SET last_use = ? WHERE digest = ?", [.integer(state.useCounter), .text(key.digest)])
            return (fd, row.relative, row.size, format, row.width, row.height, row.crop)
        }
        guard let found else { return nil }
        let bytes = CacheFiles.readAll(found.fd, expectedSize: found.size)
        _ = Glibc.close(found.fd)
        guard let bytes else {
            // Truncated or unreadable behind our back: forget it, it will be rendered again.
            index.state.withLock { index.dropEntry(digest: key.digest, relative: found.relative, &$0) }
            return nil
        }
        return CachedThumbnail(key: key, bytes: bytes, filePath: directory + "/" + found.relative,
                               format: found.format, width: found.width, height: found.height, crop: found.crop)
    }

    /// Stores the thumbnail's file and row. A failed write is repaired once (a removed folder
    /// recreated, room made on a full disk) and tried again; a failure that remains starts (or
    /// continues) a reported episode and is thrown: the caller serves from memory.
    package func insert(_ thumbnail: CachedThumbnail) throws(CacheError) {
        let key = thumbnail.key
        let operation = "insert \(key.digest)"
        guard CacheIndex.isDigest(key.digest) else { throw CacheError(operation: operation, reason: "not a cache digest") }
        let relative = CacheIndex.relativePath(digest: key.digest, format: thumbnail.format)
        let finalPath = directory + "/" + relative
        guard thumbnail.filePath == finalPath else {
            throw CacheError(operation: operation, reason: "file path \(thumbnail.filePath) is not this cache's path \(finalPath)")
        }
        guard index.state.withLock({ $0.database != nil }) else { throw CacheError(operation: operation, reason: "the cache is closed") }
        do {
            try store(thumbnail, relative: relative)
        } catch {
            guard index.repair(after: error, needingBytes: thumbnail.bytes.count) else {
                index.noteWriteFailure(error)
                throw error
            }
            do {
                try store(thumbnail, relative: relative)
            } catch {
                index.noteWriteFailure(error)
                throw error
            }
        }
        index.noteWriteSuccess()
    }

    /// One attempt: the file under a temporary name, renamed into place, indexed, then eviction.
    private func store(_ thumbnail: CachedThumbnail, relative: String) throws(CacheError) {
        let key = thumbnail.key
        let operation = "insert \(key.digest)"
        let finalPath = directory + "/" + relative

        index.makeRoomBeforeWriting(thumbnail.bytes.count)
        // Outside the lock: the whole file under a temporary name in the same folder.
        let shard = directory + "/" + key.digest.prefix(2)
        let temporary = "\(shard)/\(key.digest).tmp-\(getpid())-\(temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
        do {
            try CacheFiles.createDirectory(shard)
            try CacheFiles.writeNewFile(temporary, thumbnail.bytes)
        } catch {
            throw CacheFiles.cacheError(error)
        }

        // Under the lock: publish the file, then index it, then evict.
        try index.state.withLock { (state: inout CacheIndex.State) throws(CacheError) in
            guard let database = state.database else {
                CacheFiles.remove(temporary)
                throw CacheError(operation: operation, reason: "the cache is closed")
            }
            var replaced: (relative: String, size: Int)?
            do throws(SQLiteError) {
                try database.query("SELECT file_path, bytes FROM entries WHERE digest = ?", [.text(key.digest)]) { replaced = ($0.text(0), $0.int(1)) }
            } catch {
                CacheFiles.remove(temporary)
                index.recover(from: error, &state)
                throw CacheFiles.cacheError(operation, error)
            }
            do throws(SystemError) {
                try systemCall("rename \(temporary)") { rename(temporary, finalPath) }
            } catch {
                CacheFiles.remove(temporary)
                throw CacheFiles.cacheError(error)
            }
            state.useCounter += 1
            var next = state
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    try database.execute("""
                        INSERT OR REPLACE INTO entries (digest, descriptor, asset_path, file_path, bytes, format, width, height, last_use, crop)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(key.digest), .text(key.descriptor), .text(key.assetPath), .text(relative),
                              .integer(Int64(thumbnail.bytes.count)), .text(thumbnail.format.rawValue),
                              .integer(Int64(thumbnail.width)), .integer(Int64(thumbnail.height)), .integer(next.useCounter),
                              thumbnail.crop.map { .text($0.indexText) } ?? .null])
                    if let replaced {
                        next.totalBytes -= replaced.size
                        next.entryCount -= 1
                    }
                    next.totalBytes += thumbnail.bytes.count
                    next.entryCount += 1
                    try CacheIndex.evictRows(&next, budget: min(index.byteBudget, next.budgetCap), directory: directory)
                }
            } catch {
                // Not indexed: the file must not stay (nor the old row, whose file it replaced).
                CacheFiles.remove(finalPath)
                if let replaced, replaced.relative == relative { index.dropEntry(digest: key.digest, relative: relative, &state) }
                index.recover(from: error, &state)
                throw CacheFiles.cacheError(operation, error)
            }
            if let replaced, replaced.relative != relative { index.reaper.retire(directory + "/" + replaced.relative) }
            state = next
            index.retireEvictedFiles(&state)
        }
    }

    package func removeThumbnails(ofAsset assetPath: String) {
        removeThumbnails(ofAssets: [assetPath])
    }

    /// The thumbnails and failure records of these assets, in one transaction; what went.
    @discardableResult
    /// `keepingFailures`: the assets' remembered failures stay (an operator's purge, unless it
    /// asks: a purge must not let a worker-crashing file crash a fresh worker on every request).
    package func removeThumbnails(ofAssets assetPaths: [String], keepingFailures: Bool = false) -> CachePurge {
        index.state.withLock { (state: inout CacheIndex.State) -> CachePurge in
            guard let database = state.database else { return CachePurge() }
            var files: [(relative: String, size: Int)] = []
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for assetPath in assetPaths {
                        try database.query("SELECT file_path, bytes FROM entries WHERE asset_path = ?", [.text(assetPath)]) { files.append(($0.text(0), $0.int(1))) }
                        try database.execute("DELETE FROM entries WHERE asset_path = ?", [.text(assetPath)])
                        if !keepingFailures { try database.execute("DELETE FROM failures WHERE asset_path = ?", [.text(assetPath)]) }
                        try database.execute("DELETE FROM placeholders WHERE asset_path = ?", [.text(assetPath)])
                    }
                }
                state.removalTransactions += 1
            } catch {
                index.recover(from: error, &state)
                return CachePurge()
            }
            return index.retire(files, of: Set(assetPaths.map { ExactPath($0) }), &state)
        }
    }

    // MARK: - Inspection

    /// Whether the index has `key` (no file read, no use counted): for pre-rendering, which
    /// only needs to know whether work is left.
    package func contains(_ key: CacheKey) -> Bool {
        index.state.withLock { (state: inout CacheIndex.State) -> Bool in
            guard let database = state.database else { return false }
            var descriptor: String?
            do throws(SQLiteError) {
                try database.query("SELECT descriptor FROM entries WHERE digest = ?", [.text(key.digest)]) { descriptor = $0.text(0) }
            } catch {
                index.recover(from: error, &state)
            }
            return descriptor == key.descriptor
        }
    }

    /// The assets (relative paths) that have thumbnails or failures, to reconcile with the
    /// asset folder.
    package func assetPaths() -> Set<String> {
        index.state.withLock { (state: inout CacheIndex.State) -> Set<String> in
            guard let database = state.database else { return [] }
            var paths: Set<String> = []
            do throws(SQLiteError) {
                try database.query("SELECT asset_path FROM entries UNION SELECT asset_path FROM failures UNION SELECT asset_path FROM placeholders") { paths.insert($0.text(0)) }
            } catch {
                index.recover(from: error, &state)
            }
            return paths
        }
    }

    /// The assets under the relative folder `folder` (at any depth; "" is the root) that have
    /// thumbnails or failures: one range of the `entries_by_asset` index and one of the
    /// failures' key, so the work is the folder's rows, not the whole index.
    package func assetPaths(under folder: String) -> Set<String> {
        let (condition, bounds) = CacheIndex.rangeCondition(under: folder)
        return index.state.withLock { (state: inout CacheIndex.State) -> Set<String> in
            guard let database = state.database else { return [] }
            var paths: Set<String> = []
            do throws(SQLiteError) {
                try database.query("SELECT asset_path FROM entries WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
                try database.query("SELECT asset_path FROM failures WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
                try database.query("SELECT asset_path FROM placeholders WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
            } catch {
                index.recover(from: error, &state)
            }
            return paths
        }
    }

    /// Drops the thumbnails and failures of every asset under `folder` in one transaction (a
    /// folder of 10k files is one commit, not 10k); returns those assets (for the memory cache).
    @discardableResult
    package func removeThumbnails(under folder: String) -> Set<String> {
        Set(purge(under: folder).assetPaths.map(\.text))
    }

    /// `removeThumbnails(under:)`, saying what went.
    package func purge(under folder: String, keepingFailures: Bool = false) -> CachePurge {
        let (condition, bounds) = CacheIndex.rangeCondition(under: folder)
        return index.state.withLock { (state: inout CacheIndex.State) -> CachePurge in
            guard let database = state.database else { return CachePurge() }
            var paths: Set<ExactPath> = []
            var files: [(relative: String, size: Int)] = []
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    try database.query("SELECT asset_path, file_path, bytes FROM entries WHERE \(condition)", bounds) {
                        paths.insert(ExactPath($0.text(0)))
                        files.append(($0.text(1), $0.int(2)))
                    }
                    if !keepingFailures {
                        try database.query("SELECT asset_path FROM failures WHERE \(condition)", bounds) { paths.insert(ExactPath($0.text(0))) }
                    }
                    try database.execute("DELETE FROM entries WHERE \(condition)", bounds)
                    if !keepingFailures { try database.execute("DELETE FROM failures WHERE \(condition)", bounds) }
                    try database.execute("DELETE FROM placeholders WHERE \(condition)", bounds)
                }
            } catch {
                index.recover(from: error, &state)
                return CachePurge()
            }
            return index.retire(files, of: paths, &state)
        }
    }

    /// Writes `thumbnail` again off the caller's thread (it was rendered while the cache could
    /// not write, or its file went away since) and hands the stored copy to `stored`. One write
    /// per thumbnail at a time, at most 64 at once: the rest are skipped.
    func storeInBackground(_ thumbnail: CachedThumbnail, stored: @escaping @Sendable (CachedThumbnail) -> Void) {
        let digest = thumbnail.key.digest
        guard restoring.withLock({ $0.count < 64 && $0.insert(digest).inserted }) else { return }
        rewrites.submit { [self] in
            defer { _ = restoring.withLock { $0.remove(digest) } }
            var copy = thumbnail
            copy.filePath = filePath(for: copy.key, format: copy.format)
            guard (try? insert(copy)) != nil else { return }
            copy.isStored = true
            stored(copy)
        }
    }
}

extension ThumbnailStore {
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
        index.state.withLock { (state: inout CacheIndex.State) -> (purge: CachePurge, nextPosition: String?) in
            guard let database = state.database else { return (CachePurge(), nil) }
            var digests: [String] = []
            var paths: Set<ExactPath> = []
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
                        paths.insert(ExactPath(row.text(3)))
                        files.append((row.text(4), row.int(5)))
                    }
                    for digest in digests { try database.execute("DELETE FROM entries WHERE digest = ?", [.text(digest)]) }
                }
                if !digests.isEmpty { state.removalTransactions += 1 }
            } catch {
                index.recover(from: error, &state)
                return (CachePurge(), nil)
            }
            return (index.retire(files, of: paths, &state), read < rows ? nil : last)
        }
    }
}
