#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbSystem

/// The index: schema, opening (moving a damaged or unknown one aside), reconciliation with
/// the files, eviction.
extension DiskCache {
    /// PRAGMA user_version of the schema below.
    static let schemaVersion: Int64 = 2

    /// Negative entries; `record` is a `NegativeRecord` raw value.
    static let failuresTable = """
        CREATE TABLE failures (
            asset_path TEXT PRIMARY KEY NOT NULL,
            version TEXT NOT NULL,
            record INTEGER NOT NULL,
            reason TEXT NOT NULL
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
            last_use INTEGER NOT NULL
        );
        CREATE INDEX entries_by_asset ON entries (asset_path);
        CREATE INDEX entries_by_use ON entries (last_use);
        \(failuresTable)
        PRAGMA user_version = 2;
        """

    /// Version 1 kept a failure's kind as text; its negative entries are dropped (they are
    /// cheap to learn again), its thumbnails kept.
    static let upgradeFromVersion1 = """
        DROP TABLE IF EXISTS failures;
        \(failuresTable)
        PRAGMA user_version = 2;
        """

    /// Opens the index in `directory`, reconciles it with the files and evicts to `budget`. An
    /// index that cannot be read, fails its check, has an unknown schema or cannot be reconciled
    /// is moved aside and rebuilt empty, and that is logged at warning with the files it cost.
    static func openState(directory: String, budget: Int, log: PipelineLog) throws(CacheError) -> State {
        let indexPath = directory + "/" + indexName
        let opened = try openIndex(at: indexPath)
        var state = State(database: opened.database)
        var damage = opened.damage.map { "\($0)" }
        var dropped = Dropped()
        do throws(SQLiteError) {
            dropped = try reconcile(&state, directory: directory)
            try evict(&state, budget: budget, directory: directory)
        } catch {
            // Readable but not usable (a table missing, damage the check did not see): rebuild.
            state.database?.close()
            moveAside(indexPath)
            damage = "\(error)"
            state = State(database: try openIndex(at: indexPath).database)
            do throws(SQLiteError) {
                let more = try reconcile(&state, directory: directory)
                dropped.files += more.files
                dropped.fileBytes += more.fileBytes
            } catch {
                state.database?.close()
                throw DiskCacheFiles.cacheError("reconcile \(directory)", error)
            }
        }
        if let damage {
            log.warning("cache index \(indexPath) was unusable (\(damage)): moved aside to \(indexName).broken and rebuilt empty; "
                        + "dropped \(dropped.files) thumbnail files (\(dropped.fileBytes) bytes) it no longer indexed")
        } else if dropped.files > 0 || dropped.rows > 0 {
            // After a crash: a few orphans, normal, but worth a line.
            log.notice("cache \(directory) reconciled with its index: removed \(dropped.files) files without a row "
                       + "(\(dropped.fileBytes) bytes) and \(dropped.rows) rows without their file")
        }
        state.folder = FolderIdentity(of: directory)
        return state
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
            throw DiskCacheFiles.cacheError("open index \(path)", error)
        }
    }

    private static func openChecked(_ path: String) throws(SQLiteError) -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path)
        do throws(SQLiteError) {
            try database.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            if try database.scalar("PRAGMA user_version") == 1 {
                try database.transaction { () throws(SQLiteError) in try database.exec(upgradeFromVersion1) }
            }
            switch try database.scalar("PRAGMA user_version") ?? 0 {
            case 0:
                guard try database.scalar("SELECT count(*) FROM sqlite_master") == 0 else {
                    throw SQLiteError(operation: "open \(path)", code: 26, message: "not a thumbnail index")
                }
                try database.transaction { () throws(SQLiteError) in try database.exec(schema) }
            case schemaVersion:
                guard try database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('entries', 'failures')") == 2 else {
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
                DiskCacheFiles.remove(path + suffix)
            }
        }
        DiskCacheFiles.remove(path + "-shm")
    }

    /// Makes the index and the files agree: removes temporary files, files without a row,
    /// rows without their file (or whose file has another size, or another name than the
    /// digest gives), then loads totals and the use counter.
    @discardableResult
    static func reconcile(_ state: inout State, directory: String) throws(SQLiteError) -> Dropped {
        var dropped = Dropped()
        guard let database = state.database else { return dropped }
        var rows: [String: (digest: String, size: Int)] = [:]
        var badRows: [String] = []
        try database.query("SELECT digest, file_path, bytes, format FROM entries") { row in
            let digest = row.text(0), relative = row.text(1)
            if isDigest(digest), let format = ImageFormat(rawValue: row.text(3)),
               relative == relativePath(digest: digest, format: format) {
                rows[relative] = (digest, row.int(2))
            } else {
                badRows.append(digest)
            }
        }
        var kept: Set<String> = []
        for shard in (try? DiskCacheFiles.names(in: directory)) ?? [] where isShardName(shard) {
            let shardPath = directory + "/" + shard
            guard DiskCacheFiles.isDirectory(shardPath), let names = try? DiskCacheFiles.names(in: shardPath) else { continue }
            for name in names {
                let relative = shard + "/" + name
                let size = DiskCacheFiles.regularFileSize(shardPath + "/" + name)
                if let row = rows[relative], size == row.size {
                    kept.insert(relative)
                } else {
                    // A temporary file, an orphan (crash between rename and insert), a file
                    // whose row says another size, or a stranger.
                    DiskCacheFiles.remove(shardPath + "/" + name)
                    dropped.files += 1
                    dropped.fileBytes += size ?? 0
                }
            }
        }
        badRows += rows.filter { !kept.contains($0.key) }.map(\.value.digest)
        dropped.rows = badRows.count
        if !badRows.isEmpty {
            try database.transaction { () throws(SQLiteError) in
                for digest in badRows { try database.execute("DELETE FROM entries WHERE digest = ?", [.text(digest)]) }
            }
        }
        try database.query("SELECT count(*), coalesce(sum(bytes), 0), coalesce(max(last_use), 0) FROM entries") { row in
            state.entryCount = row.int(0)
            state.totalBytes = row.int(1)
            state.useCounter = row.integer(2)
        }
        return dropped
    }

    private static func isShardName(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
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
        for relative in state.evictedFiles { DiskCacheFiles.remove(directory + "/" + relative) }
        state.evictedFiles.removeAll()
    }
}
