#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ThumbImaging
import ThumbSystem

/// The cache folder's index: the one SQLite connection (WAL), its schema and upgrades
/// (`CacheIndex+Schema.swift`), the folder's lock, the thumbnails' byte totals and eviction
/// under the budget, the reconcile of the files with the rows (`+Reconcile`) and write health
/// (`+Health`). The stores (`Stores/`: thumbnails, failures, backlog, placeholders, focus) each
/// keep one concern's rows on top of it, through `withDatabase`.
///
/// Layout: `directory/<digest[0..<2]>/<digest>.<ext>` for each thumbnail, the index
/// `directory/index.sqlite` and `directory/thumbd.lock`, flocked by the one process that has
/// the cache open (a second is refused: `CacheError.Kind.inUse`). Opening reconciles the index
/// with the files, so a crash or `kill -9` at any point leaves nothing that is served wrong: at
/// worst a thumbnail is rendered again. An unreadable or unknown index is moved aside and
/// rebuilt (the cache is only a cache), and the log says what that dropped.
///
/// Thread-safe: every statement runs under the one lock (one connection; SQLite serializes
/// writers anyway, and a store's transaction may touch another's rows: an asset's removal drops
/// its thumbnails, failures and placeholder at once). Lock order: this lock, then a store's own
/// (the focus mirror); nothing takes this lock while holding a store's.
package final class CacheIndex: @unchecked Sendable {
    /// Absolute, symlink-free path of the cache folder.
    package let directory: String
    /// Total thumbnail bytes kept; older entries are evicted beyond it.
    package let byteBudget: Int
    let log: PipelineLog

    struct State {
        /// nil once closed.
        var database: SQLiteDatabase?
        /// The thumbnails' bytes and rows, kept with the rows that change them.
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
        /// The pre-render backlog's row count and last sequence number (`BacklogStore`).
        var backlog = BacklogCounts()
    }

    let state: Mutex<State>
    /// Unlinks removed rows' files in the background (see `CacheFileReaper`).
    let reaper = CacheFileReaper()
    /// Transactions that removed thumbnails (tests: deletions are batched).
    var removalTransactions: Int { state.withLock { $0.removalTransactions } }

    static let indexName = "index.sqlite"

    /// Opens (creating if needed) the index in `directory`. Throws `CacheError.Kind.inUse` when
    /// another process has it open. `reconcilesFiles`: the files are reconciled with the index
    /// before this returns; false leaves that to a later `reconcileFiles()` (the pipeline runs
    /// it in the background, serving meanwhile: a row whose file is gone only costs a render).
    package init(directory: String, byteBudget: Int, log: PipelineLog = .standardError, reconcilesFiles: Bool = true) throws(CacheError) {
        do {
            try CacheFiles.createDirectories(directory)
            self.directory = try CacheFiles.realPath(directory)
        } catch {
            throw CacheFiles.cacheError(error)
        }
        self.byteBudget = max(0, byteBudget)
        self.log = log
        let lock = try CacheLock(directory: self.directory)
        var initial = try Self.openState(directory: self.directory, budget: self.byteBudget, log: log)
        initial.lock = lock
        state = Mutex(initial)
        if reconcilesFiles { reconcileFiles() }
    }

    deinit { close() }

    /// The budget in force: the configured one, or less once the disk has filled up.
    var effectiveBudget: Int { state.withLock { min(byteBudget, $0.budgetCap) } }

    /// Bytes and number of the cached thumbnails.
    package var statistics: (bytes: Int, entries: Int) {
        state.withLock { ($0.totalBytes, $0.entryCount) }
    }

    /// Runs `body` with the open connection under the lock; a failed statement is recovered
    /// from (a damaged index is rebuilt) and `failed` answered. `closed` when the index is closed.
    func withDatabase<Result: Sendable>(closed: Result, failed: Result,
                              _ body: (SQLiteDatabase, inout State) throws(SQLiteError) -> Result) -> Result {
        state.withLock { (state: inout State) -> Result in
            guard let database = state.database else { return closed }
            do throws(SQLiteError) {
                return try body(database, &state)
            } catch {
                recover(from: error, &state)
                return failed
            }
        }
    }

    /// As `withDatabase`, for a caller that must say why it failed: a closed index or a failed
    /// statement is thrown as a `CacheError` of `operation`.
    func withDatabase<Result: Sendable>(operation: String,
                              _ body: (SQLiteDatabase, inout State) throws(SQLiteError) -> Result) throws(CacheError) -> Result {
        try state.withLock { (state: inout State) throws(CacheError) -> Result in
            guard let database = state.database else { throw CacheError(operation: operation, reason: "the cache is closed") }
            do throws(SQLiteError) {
                return try body(database, &state)
            } catch {
                recover(from: error, &state)
                throw CacheFiles.cacheError(operation, error)
            }
        }
    }

    /// Closes the index; afterwards lookups miss and inserts fail. Idempotent.
    package func close() {
        state.withLock { state in
            state.database?.close()
            state.database = nil
            state.lock?.release()
            state.lock = nil
        }
        reaper.finishInBackground()
    }

    /// Where a thumbnail of this digest and format lives, relative to the folder.
    static func relativePath(digest: String, format: ImageFormat) -> String {
        "\(digest.prefix(2))/\(digest).\(format.fileExtension)"
    }

    static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
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

    // MARK: - Helpers (called with the lock held)

    /// Hands removed thumbnail rows' files to the reaper and takes them off the totals.
    func retire(_ files: [(relative: String, size: Int)], of assetPaths: Set<ExactPath>, _ state: inout State) -> CachePurge {
        for file in files {
            reaper.retire(directory + "/" + file.relative)
            state.totalBytes -= file.size
            state.entryCount -= 1
        }
        return CachePurge(entries: files.count, bytes: files.reduce(0) { $0 + $1.size }, assetPaths: assetPaths)
    }

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
            CacheFiles.remove(directory + "/" + relative)
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
}
