#if canImport(Glibc)
import Glibc
#endif
import Synchronization
package import ThumbImaging
import ThumbSystem

/// Thumbnails on disk, indexed by SQLite, evicted least-recently-used under a byte budget.
///
/// Layout: `directory/<digest[0..<2]>/<digest>.<ext>` for each thumbnail, the index
/// `directory/index.sqlite` (WAL) and `directory/thumbd.lock`, flocked by the one process that
/// has the cache open (a second is refused: `CacheError.Kind.inUse`). A file appears under its
/// final name only whole (written to a temporary name, fsynced, renamed), and opening the cache
/// reconciles the index with the files, so a crash or `kill -9` at any point leaves nothing that
/// is served wrong: at worst a thumbnail is rendered again. An unreadable or unknown index is
/// moved aside and rebuilt (the cache is only a cache), and the log says what that dropped.
///
/// When writes fail (the folder was removed, the disk is full) the cache repairs what it can —
/// recreates the folder with a fresh index, evicts to make room and lowers its budget to what
/// the disk holds — and reports the episode once (see `DiskCache+Health.swift`).
///
/// Thread-safe: every operation on the index holds one lock; writing a new file and reading
/// a hit's bytes happen outside it.
package final class DiskCache: ThumbnailCaching, @unchecked Sendable {
    /// Absolute, symlink-free path of the cache folder.
    package let directory: String
    /// Total thumbnail bytes kept; older entries are evicted beyond it.
    package let byteBudget: Int
    let log: PipelineLog

    struct State {
        /// nil once closed.
        var database: SQLiteDatabase?
        var totalBytes = 0
        var entryCount = 0
        /// The last `last_use` handed out; continues from the index's maximum at open.
        var useCounter: Int64 = 0
        /// Files of rows evicted in the current transaction, removed once it commits.
        var evictedFiles: [String] = []
        var removalTransactions = 0
        /// Held while the cache is open (taken again when a removed folder is recreated).
        var lock: CacheLock?
        /// The folder's device and inode at open: a removed or replaced folder shows as a change.
        var folder: FolderIdentity?
        /// What the disk turned out to hold (lowered at ENOSPC); never above `byteBudget`.
        var budgetCap = Int.max
        /// The write failure being lived through, reported once at its start and once at its end.
        var trouble: WriteTrouble?
        /// Why the index was rebuilt empty at open, for the warning the file reconcile logs with
        /// the files that cost (nil: it opened fine).
        var unusableIndex: String?
        /// The pre-render backlog's row count and last sequence number (`DiskCache+Backlog.swift`).
        var backlog = BacklogCounts()
    }

    let state: Mutex<State>
    /// Makes temporary names unique within the process (the pid makes them unique across).
    private let temporaryCounter = Atomic<Int>(0)
    /// Unlinks removed rows' files in the background (see `CacheFileReaper`).
    let reaper = CacheFileReaper()
    /// Transactions `removeThumbnails` committed (tests: deletions are batched).
    var removalTransactions: Int { state.withLock { $0.removalTransactions } }
    /// Digests being written again in the background (`storeInBackground`).
    let restoring = Mutex<Set<String>>([])
    /// Every asset's focus, mirrored from the index (`DiskCache+Focus.swift`).
    let focusMemo = FocusMemo()

    static let indexName = "index.sqlite"

    /// Opens (creating if needed) the cache in `directory`. Throws `CacheError.Kind.inUse` when
    /// another process has it open. `reconcilesFiles`: the files are reconciled with the index
    /// before this returns; false leaves that to a later `reconcileFiles()` (the pipeline runs
    /// it in the background, serving meanwhile: a row whose file is gone only costs a render).
    package init(directory: String, byteBudget: Int, log: PipelineLog = .standardError, reconcilesFiles: Bool = true) throws(CacheError) {
        do {
            try DiskCacheFiles.createDirectories(directory)
            self.directory = try DiskCacheFiles.realPath(directory)
        } catch {
            throw DiskCacheFiles.cacheError(error)
        }
        self.byteBudget = max(0, byteBudget)
        self.log = log
        let lock = try CacheLock(directory: self.directory)
        var initial = try Self.openState(directory: self.directory, budget: self.byteBudget, log: log)
        initial.lock = lock
        state = Mutex(initial)
        if reconcilesFiles { reconcileFiles() }
    }

    /// The budget in force: the configured one, or less once the disk has filled up.
    var effectiveBudget: Int { state.withLock { min(byteBudget, $0.budgetCap) } }

    deinit { close() }

    /// Where the thumbnail for `key` in `format` lives (whether or not it is cached).
    package func filePath(for key: CacheKey, format: ImageFormat) -> String {
        directory + "/" + Self.relativePath(digest: key.digest, format: format)
    }

    static func relativePath(digest: String, format: ImageFormat) -> String {
        "\(digest.prefix(2))/\(digest).\(format.fileExtension)"
    }

    // MARK: - ThumbnailCaching

    package func thumbnail(for key: CacheKey) -> CachedThumbnail? {
        guard Self.isDigest(key.digest) else { return nil }
        // Under the lock: find the row, open the file (the descriptor keeps this version
        // readable even if it is evicted or replaced meanwhile), count the use.
        let found = state.withLock { (state: inout State) -> (fd: Int32, relative: String, size: Int, format: ImageFormat, width: Int, height: Int,
                                                               crop: CropRectangle?)? in
            guard let database = state.database else { return nil }
            var row: (descriptor: String, relative: String, size: Int, format: String, width: Int, height: Int, crop: CropRectangle?)?
            do throws(SQLiteError) {
                try database.query("SELECT descriptor, file_path, bytes, format, width, height, crop FROM entries WHERE digest = ?",
                                   [.text(key.digest)]) {
                    row = ($0.text(0), $0.text(1), $0.int(2), $0.text(3), $0.int(4), $0.int(5), $0.isNull(6) ? nil : CropRectangle(indexText: $0.text(6)))
                }
            } catch {
                recover(from: error, &state)
                return nil
            }
            guard let row, row.descriptor == key.descriptor else { return nil }
            let path = directory + "/" + row.relative
            guard let format = ImageFormat(rawValue: row.format) else {
                dropEntry(digest: key.digest, relative: row.relative, &state)
                return nil
            }
            let fd: Int32
            do throws(SystemError) {
                fd = try systemCall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
            } catch {
                // Out of descriptors says nothing about the file; anything else: it is gone
                // (and when the whole folder is, it is recreated now, not at the next write).
                if ![EMFILE, ENFILE, ENOMEM].contains(error.errno) { dropEntry(digest: key.digest, relative: row.relative, &state) }
                if error.errno == ENOENT { _ = recreateFolderIfGone(&state) }
                return nil
            }
            state.useCounter += 1
            _ = try? database.execute("UPDATE entries SET last_use = ? WHERE digest = ?", [.integer(state.useCounter), .text(key.digest)])
            return (fd, row.relative, row.size, format, row.width, row.height, row.crop)
        }
        guard let found else { return nil }
        let bytes = DiskCacheFiles.readAll(found.fd, expectedSize: found.size)
        _ = Glibc.close(found.fd)
        guard let bytes else {
            // Truncated or unreadable behind our back: forget it, it will be rendered again.
            state.withLock { dropEntry(digest: key.digest, relative: found.relative, &$0) }
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
        guard Self.isDigest(key.digest) else { throw CacheError(operation: operation, reason: "not a cache digest") }
        let relative = Self.relativePath(digest: key.digest, format: thumbnail.format)
        let finalPath = directory + "/" + relative
        guard thumbnail.filePath == finalPath else {
            throw CacheError(operation: operation, reason: "file path \(thumbnail.filePath) is not this cache's path \(finalPath)")
        }
        guard state.withLock({ $0.database != nil }) else { throw CacheError(operation: operation, reason: "the cache is closed") }
        do {
            try store(thumbnail, relative: relative)
        } catch {
            guard repair(after: error, needingBytes: thumbnail.bytes.count) else {
                noteWriteFailure(error)
                throw error
            }
            do {
                try store(thumbnail, relative: relative)
            } catch {
                noteWriteFailure(error)
                throw error
            }
        }
        noteWriteSuccess()
    }

    /// One attempt: the file under a temporary name, renamed into place, indexed, then eviction.
    private func store(_ thumbnail: CachedThumbnail, relative: String) throws(CacheError) {
        let key = thumbnail.key
        let operation = "insert \(key.digest)"
        let finalPath = directory + "/" + relative

        makeRoomBeforeWriting(thumbnail.bytes.count)
        // Outside the lock: the whole file under a temporary name in the same folder.
        let shard = directory + "/" + key.digest.prefix(2)
        let temporary = "\(shard)/\(key.digest).tmp-\(getpid())-\(temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
        do {
            try DiskCacheFiles.createDirectory(shard)
            try DiskCacheFiles.writeNewFile(temporary, thumbnail.bytes)
        } catch {
            throw DiskCacheFiles.cacheError(error)
        }

        // Under the lock: publish the file, then index it, then evict.
        try state.withLock { (state: inout State) throws(CacheError) in
            guard let database = state.database else {
                DiskCacheFiles.remove(temporary)
                throw CacheError(operation: operation, reason: "the cache is closed")
            }
            var replaced: (relative: String, size: Int)?
            do throws(SQLiteError) {
                try database.query("SELECT file_path, bytes FROM entries WHERE digest = ?", [.text(key.digest)]) { replaced = ($0.text(0), $0.int(1)) }
            } catch {
                DiskCacheFiles.remove(temporary)
                recover(from: error, &state)
                throw DiskCacheFiles.cacheError(operation, error)
            }
            do throws(SystemError) {
                try systemCall("rename \(temporary)") { rename(temporary, finalPath) }
            } catch {
                DiskCacheFiles.remove(temporary)
                throw DiskCacheFiles.cacheError(error)
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
                    try Self.evictRows(&next, budget: min(byteBudget, next.budgetCap), directory: directory)
                }
            } catch {
                // Not indexed: the file must not stay (nor the old row, whose file it replaced).
                DiskCacheFiles.remove(finalPath)
                if let replaced, replaced.relative == relative { dropEntry(digest: key.digest, relative: relative, &state) }
                recover(from: error, &state)
                throw DiskCacheFiles.cacheError(operation, error)
            }
            if let replaced, replaced.relative != relative { reaper.retire(directory + "/" + replaced.relative) }
            state = next
            retireEvictedFiles(&state)
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
        state.withLock { (state: inout State) -> CachePurge in
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
                recover(from: error, &state)
                return CachePurge()
            }
            return retire(files, of: Set(assetPaths), &state)
        }
    }

    /// Hands removed rows' files to the reaper and takes them off the totals.
    func retire(_ files: [(relative: String, size: Int)], of assetPaths: Set<String>, _ state: inout State) -> CachePurge {
        for file in files {
            reaper.retire(directory + "/" + file.relative)
            state.totalBytes -= file.size
            state.entryCount -= 1
        }
        return CachePurge(entries: files.count, bytes: files.reduce(0) { $0 + $1.size }, assetPaths: assetPaths)
    }

    // MARK: - Inspection

    /// Bytes and number of the cached thumbnails.
    package var statistics: (bytes: Int, entries: Int) {
        state.withLock { ($0.totalBytes, $0.entryCount) }
    }

    /// Whether the index has `key` (no file read, no use counted): for pre-rendering, which
    /// only needs to know whether work is left.
    package func contains(_ key: CacheKey) -> Bool {
        state.withLock { (state: inout State) -> Bool in
            guard let database = state.database else { return false }
            var descriptor: String?
            do throws(SQLiteError) {
                try database.query("SELECT descriptor FROM entries WHERE digest = ?", [.text(key.digest)]) { descriptor = $0.text(0) }
            } catch {
                recover(from: error, &state)
            }
            return descriptor == key.descriptor
        }
    }

    /// The assets (relative paths) that have thumbnails or failures, to reconcile with the
    /// asset folder.
    package func assetPaths() -> Set<String> {
        state.withLock { (state: inout State) -> Set<String> in
            guard let database = state.database else { return [] }
            var paths: Set<String> = []
            do throws(SQLiteError) {
                try database.query("SELECT asset_path FROM entries UNION SELECT asset_path FROM failures UNION SELECT asset_path FROM placeholders") { paths.insert($0.text(0)) }
            } catch {
                recover(from: error, &state)
            }
            return paths
        }
    }

    /// The assets under the relative folder `folder` (at any depth; "" is the root) that have
    /// thumbnails or failures: one range of the `entries_by_asset` index and one of the
    /// failures' key, so the work is the folder's rows, not the whole index.
    package func assetPaths(under folder: String) -> Set<String> {
        let (condition, bounds) = Self.rangeCondition(under: folder)
        return state.withLock { (state: inout State) -> Set<String> in
            guard let database = state.database else { return [] }
            var paths: Set<String> = []
            do throws(SQLiteError) {
                try database.query("SELECT asset_path FROM entries WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
                try database.query("SELECT asset_path FROM failures WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
                try database.query("SELECT asset_path FROM placeholders WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
            } catch {
                recover(from: error, &state)
            }
            return paths
        }
    }

    /// Drops the thumbnails and failures of every asset under `folder` in one transaction (a
    /// folder of 10k files is one commit, not 10k); returns those assets (for the memory cache).
    @discardableResult
    package func removeThumbnails(under folder: String) -> Set<String> {
        purge(under: folder).assetPaths
    }

    /// `removeThumbnails(under:)`, saying what went.
    package func purge(under folder: String, keepingFailures: Bool = false) -> CachePurge {
        let (condition, bounds) = Self.rangeCondition(under: folder)
        return state.withLock { (state: inout State) -> CachePurge in
            guard let database = state.database else { return CachePurge() }
            var paths: Set<String> = []
            var files: [(relative: String, size: Int)] = []
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    try database.query("SELECT asset_path, file_path, bytes FROM entries WHERE \(condition)", bounds) {
                        paths.insert($0.text(0))
                        files.append(($0.text(1), $0.int(2)))
                    }
                    if !keepingFailures {
                        try database.query("SELECT asset_path FROM failures WHERE \(condition)", bounds) { paths.insert($0.text(0)) }
                    }
                    try database.execute("DELETE FROM entries WHERE \(condition)", bounds)
                    if !keepingFailures { try database.execute("DELETE FROM failures WHERE \(condition)", bounds) }
                    try database.execute("DELETE FROM placeholders WHERE \(condition)", bounds)
                }
            } catch {
                recover(from: error, &state)
                return CachePurge()
            }
            return retire(files, of: paths, &state)
        }
    }

    /// The paths under `folder` as a range of the index, which orders them by SQLite's BINARY
    /// collation (bytes, as `memcmp`): from "folder/" up to, not including, "folder0" — '0' is
    /// the byte after '/', so the range holds every path that starts with "folder/" and nothing
    /// else ("folder0", "folder.x", "folder b/x" sort outside it; multi-byte UTF-8 starts at
    /// 0xC2, above both). The root ("") is every path.
    static func rangeCondition(under folder: String) -> (sql: String, bounds: [SQLiteValue]) {
        var prefix = Substring(folder)
        while prefix.hasSuffix("/") { prefix = prefix.dropLast() }
        guard !prefix.isEmpty else { return ("asset_path >= ''", []) }
        return ("asset_path >= ? AND asset_path < ?", [.text(String(prefix) + "/"), .text(String(prefix) + "0")])
    }

    /// Closes the index; afterwards lookups miss and inserts fail. Idempotent.
    package func close() {
        state.withLock { state in
            state.database?.close()
            state.database = nil
            state.lock?.release()
            state.lock = nil
        }
    }

    // MARK: - Helpers (called with the lock held)

    /// Forgets one entry whose file is gone or unreadable: its row (if it still names that
    /// file) and the file.
    func dropEntry(digest: String, relative: String, _ state: inout State) {
        guard let database = state.database else { return }
        var size: Int?
        do throws(SQLiteError) {
            try database.transaction { () throws(SQLiteError) in
                size = try database.scalar("SELECT bytes FROM entries WHERE digest = ? AND file_path = ?", [.text(digest), .text(relative)]).map(Int.init)
                try database.execute("DELETE FROM entries WHERE digest = ? AND file_path = ?", [.text(digest), .text(relative)])
            }
        } catch {
            recover(from: error, &state)
            return
        }
        if let size {
            state.totalBytes -= size
            state.entryCount -= 1
            DiskCacheFiles.remove(directory + "/" + relative)
        }
    }

    /// After an index error: when the index is damaged, rebuild it (the cache starts empty) and
    /// say so, with what was dropped.
    func recover(from damage: SQLiteError, _ state: inout State) {
        guard damage.isCorruption, let database = state.database else { return }
        let dropped = (entries: state.entryCount, bytes: state.totalBytes)
        database.close()
        state.database = nil
        Self.moveAside(database.path)
        do {
            let rebuilt = try Self.openState(directory: directory, budget: min(byteBudget, state.budgetCap), log: log)
            state.database = rebuilt.database
            state.totalBytes = rebuilt.totalBytes
            state.entryCount = rebuilt.entryCount
            state.useCounter = rebuilt.useCounter
            state.backlog = rebuilt.backlog
            state.unusableIndex = nil
            log.warning("cache index \(database.path) was damaged (\(damage)): moved aside to \(Self.indexName).broken and rebuilt empty; "
                        + "dropped \(dropped.entries) thumbnails (\(dropped.bytes) bytes) it indexed")
            // Its files are orphans now: they go at once, as before the rebuild they were counted.
            reconcileFilesLocked(&state)
        } catch {
            log.warning("cache index \(database.path) was damaged (\(damage)) and cannot be rebuilt (\(error)): the disk cache is off")
        }
    }

    static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}
