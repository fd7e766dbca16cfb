#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbSystem

/// The index: schema (and its upgrades), opening (moving a damaged or unknown one aside),
/// totals, eviction. Reconciling the files with it is `CacheIndex+Reconcile.swift`.
extension CacheIndex {
    /// PRAGMA user_version of the schema below.
    static let schemaVersion: Int64 = 6

    /// Negative entries; `record` is a `NegativeRecord` raw value.
    static let failuresTable = """
        CREATE TABLE failures (
            asset_path TEXT PRIMARY KEY NOT NULL,
            version TEXT NOT NULL,
            record INTEGER NOT NULL,
            reason TEXT NOT NULL
        );
        """

    /// Assets whose pre-renders are still to be done (see `BacklogStore`), taken in
    /// `enqueued` order; `attempts` counts transient failures.
    static let backlogTable = """
        CREATE TABLE backlog (
            asset_path TEXT PRIMARY KEY NOT NULL,
            enqueued INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX backlog_by_enqueued ON backlog (enqueued);
        """

    /// Per asset: its placeholder, valid for the version it was computed from (`version` is
    /// `AssetVersion.description`; a file that changed has none until it is decoded again), and
    /// the focus its owner set (kept across edits of the file, gone with the asset; see docs/http-api.md).
    /// `placements` are where attention placed that version's crops (`AttentionPlacement`, as
    /// `PlaceholderStore.placementsText` writes them), NULL or empty before any was placed.
    static let assetTables = """
        CREATE TABLE placeholders (
            asset_path TEXT PRIMARY KEY NOT NULL,
            version TEXT NOT NULL,
            thumbhash BLOB NOT NULL,
            average_rgba INTEGER NOT NULL,
            placements TEXT
        );
        CREATE TABLE focus (
            asset_path TEXT PRIMARY KEY NOT NULL,
            x REAL NOT NULL,
            y REAL NOT NULL,
            width REAL NOT NULL,
            height REAL NOT NULL
        );
        """

    static let schema = """
        CREATE TABLE entries (
            digest TEXT PRIMARY KEY NOT NULL,
            descriptor TEXT NOT NULL,
            asset_path TEXT NOT NULL,
            file_path TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            format TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            last_use INTEGER NOT NULL,
            crop TEXT
        );
        CREATE INDEX entries_by_asset ON entries (asset_path);
        CREATE INDEX entries_by_use ON entries (last_use);
        \(failuresTable)
        \(backlogTable)
        \(assetTables)
        \(listingTable)
        PRAGMA user_version = 6;
        """

    /// Every asset of the folder, by path (`AssetListStore`, `GET /v1/assets`): filled by the asset
    /// reconciles and the watcher, emptied with the assets. `WITHOUT ROWID`: the path is the key
    /// and the whole row, so a page in byte order is one range of the b-tree.
    static let listingTable = """
        CREATE TABLE assets (asset_path TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
        """

    /// Version 1 kept a failure's kind as text; its negative entries are dropped (they are
    /// cheap to learn again), its thumbnails kept.
    static let upgradeFromVersion1 = """
        DROP TABLE IF EXISTS failures;
        \(failuresTable)
        PRAGMA user_version = 2;
        """

    /// Version 2 had no backlog: every thumbnail and failure is kept, the backlog starts empty
    /// (the asset reconcile at start fills it with what is missing).
    static let upgradeFromVersion2 = """
        DROP TABLE IF EXISTS backlog;
        \(backlogTable)
        PRAGMA user_version = 3;
        """

    /// Version 3 had no placeholders, focus or crop rectangles: everything is kept, the new tables
    /// start empty and old entries have no crop (`NULL`: reported as unknown). The thumbnails'
    /// keys do not change, so an upgrade serves its whole cache at once.
    static let upgradeFromVersion3 = """
        DROP TABLE IF EXISTS placeholders;
        DROP TABLE IF EXISTS focus;
        \(assetTables)
        PRAGMA user_version = 5;
        """

    /// Version 4 had no attention placements: every row is kept, and a version's placements are
    /// found again by its next attention render.
    static let upgradeFromVersion4 = """
        PRAGMA user_version = 5;
        """

    /// Version 5 had no asset listing: it starts empty, and the start-up reconcile fills it.
    static let upgradeFromVersion5 = """
        DROP TABLE IF EXISTS assets;
        \(listingTable)
        PRAGMA user_version = 6;
        """

    /// SQLite's page cache for the one connection, KiB (negative `cache_size`): the default
    /// (2 MiB) is plenty for point look-ups, and the reconciles stream in batches.
    static let pageCacheKibibytes = 2048

    /// Opens the index in `directory`, loads its totals and evicts to `budget`; the files are
    /// reconciled with it separately (`reconcileFiles`, at open or in the background), which
    /// logs what that removed. An index that cannot be read, fails its quick check, has an
    /// unknown schema or cannot be totalled is moved aside and rebuilt empty: `State.unusableIndex`
    /// says why, for that log line.
    static func openState(directory: String, budget: Int, log: PipelineLog) throws(CacheError) -> State {
        let indexPath = directory + "/" + indexName
        let opened = try openIndex(at: indexPath)
        var state = State(database: opened.database)
        var damage = opened.damage.map { "\($0)" }
        do throws(SQLiteError) {
            try loadTotals(&state)
            try evict(&state, budget: budget, directory: directory)
        } catch {
            // Readable but not usable (damage the check did not see): rebuild.
            state.database?.close()
            moveAside(indexPath)
            damage = "\(error)"
            state = State(database: try openIndex(at: indexPath).database)
            do throws(SQLiteError) {
                try loadTotals(&state)
            } catch {
                state.database?.close()
                throw CacheFiles.cacheError("open index \(indexPath)", error)
            }
        }
        state.unusableIndex = damage
        state.folder = FolderIdentity(of: directory)
        return state
    }

    /// Totals, the use counter and the backlog's size and sequence, from the index: aggregate
    /// queries (one pass over the rows' pages), no row kept in memory.
    static func loadTotals(_ state: inout State) throws(SQLiteError) {
        guard let database = state.database else { return }
        try database.query("SELECT count(*), coalesce(sum(bytes), 0), coalesce(max(last_use), 0) FROM entries") { row in
            state.entryCount = row.int(0)
            state.totalBytes = row.int(1)
            state.useCounter = row.integer(2)
        }
        try database.query("SELECT count(*), coalesce(max(enqueued), 0) FROM backlog") { row in
            state.backlog.rows = row.int(0)
            state.backlog.lastSequence = row.integer(1)
        }
    }

    /// What a reconciliation removed.
    struct Dropped {
        var files = 0
        var fileBytes = 0
        var rows = 0
    }

    /// Opens the index at `path`; one that cannot be read, fails its check or has an unknown
    /// schema is moved aside (`damage` says why) and a new one created. Throws only when a new
    /// one cannot be made.
    static func openIndex(at path: String) throws(CacheError) -> (database: SQLiteDatabase, damage: SQLiteError?) {
        var damage: SQLiteError?
        do {
            return (try openChecked(path), nil)
        } catch {
            damage = error
            moveAside(path)
        }
        do {
            return (try openChecked(path), damage)
        } catch {
            throw CacheFiles.cacheError("open index \(path)", error)
        }
    }

    private static func openChecked(_ path: String) throws(SQLiteError) -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        do throws(SQLiteError) {
            try database.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-\(pageCacheKibibytes);")
            if try database.scalar("PRAGMA user_version") == 1 {
                try database.transaction { () throws(SQLiteError) in try database.exec(upgradeFromVersion1) }
            }
            if try database.scalar("PRAGMA user_version") == 2 {
                try database.transaction { () throws(SQLiteError) in try database.exec(upgradeFromVersion2) }
            }
            if try database.scalar("PRAGMA user_version") == 3 {
                try database.transaction { () throws(SQLiteError) in
                    // An index relabelled by hand may have the column already; ADD COLUMN would fail on it.
                    if try database.scalar("SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'crop'") == 0 {
                        try database.exec("ALTER TABLE entries ADD COLUMN crop TEXT;")
                    }
                    try database.exec(upgradeFromVersion3)
                }
            }
            if try database.scalar("PRAGMA user_version") == 4 {
                try database.transaction { () throws(SQLiteError) in
                    // As above: a relabelled index may have the column already.
                    if try database.scalar("SELECT count(*) FROM pragma_table_info('placeholders') WHERE name = 'placements'") == 0 {
                        try database.exec("ALTER TABLE placeholders ADD COLUMN placements TEXT;")
                    }
                    try database.exec(upgradeFromVersion4)
                }
            }
            if try database.scalar("PRAGMA user_version") == 5 {
                try database.transaction { () throws(SQLiteError) in try database.exec(upgradeFromVersion5) }
            }
            switch try database.scalar("PRAGMA user_version") ?? 0 {
            case 0:
                guard try database.scalar("SELECT count(*) FROM sqlite_master") == 0 else {
                    throw SQLiteError(operation: "open \(path)", code: 26, message: "not a thumbnail index")
                }
                try database.transaction { () throws(SQLiteError) in try database.exec(schema) }
            case schemaVersion:
                guard try database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('entries', 'failures', 'backlog', 'placeholders', 'focus', 'assets')") == 6 else {
                    throw SQLiteError(operation: "open \(path)", code: 11, message: "index tables missing")
                }
                var verdict = ""
                try database.query("PRAGMA quick_check(1)") { verdict = $0.text(0) }
                guard verdict == "ok" else { throw SQLiteError(operation: "quick_check \(path)", code: 11, message: verdict) }
            case let version:
                throw SQLiteError(operation: "open \(path)", code: 26, message: "unknown index schema \(version)")
            }
            return database
        } catch {
            database.close()
            throw error
        }
    }

    /// Renames a damaged index (and its WAL) to `…broken`, replacing an older one, and removes
    /// its shared-memory file, so a new index starts clean.
    static func moveAside(_ path: String) {
        for suffix in ["", "-wal", "-journal"] {
            if (try? systemCall("rename \(path + suffix)", { rename(path + suffix, path + ".broken" + suffix) })) == nil {
                CacheFiles.remove(path + suffix)
            }
        }
        CacheFiles.remove(path + "-shm")
    }

    /// Evicts (in its own transaction) until the total fits the budget, then removes the files.
    static func evict(_ state: inout State, budget: Int, directory: String) throws(SQLiteError) {
        guard state.totalBytes > budget, let database = state.database else { return }
        var next = state
        try database.transaction { () throws(SQLiteError) in try evictRows(&next, budget: budget, directory: directory) }
        state = next
        removeEvictedFiles(&state, directory: directory)
    }

    /// Inside a transaction: deletes the least recently used rows until the total fits the
    /// budget, noting their files in `state.evictedFiles` (removed after the commit).
    static func evictRows(_ state: inout State, budget: Int, directory: String) throws(SQLiteError) {
        guard let database = state.database else { return }
        while state.totalBytes > budget {
            var victims: [(digest: String, relative: String, size: Int)] = []
            try database.query("SELECT digest, file_path, bytes FROM entries ORDER BY last_use ASC LIMIT 32") { victims.append(($0.text(0), $0.text(1), $0.int(2))) }
            if victims.isEmpty {  // The totals drifted from the index: trust the index.
                state.totalBytes = 0
                state.entryCount = 0
                return
            }
            for victim in victims where state.totalBytes > budget {
                try database.execute("DELETE FROM entries WHERE digest = ?", [.text(victim.digest)])
                state.totalBytes -= victim.size
                state.entryCount -= 1
                state.evictedFiles.append(victim.relative)
            }
        }
    }

    static func removeEvictedFiles(_ state: inout State, directory: String) {
        for relative in state.evictedFiles { CacheFiles.remove(directory + "/" + relative) }
        state.evictedFiles.removeAll()
    }

    /// `removeEvictedFiles` for a running cache: through the reaper, off the lock.
    func retireEvictedFiles(_ state: inout State) {
        for relative in state.evictedFiles { reaper.retire(directory + "/" + relative) }
        state.evictedFiles.removeAll()
    }
}
