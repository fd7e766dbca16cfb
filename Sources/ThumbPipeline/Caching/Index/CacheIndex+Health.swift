#if canImport(Glibc)
import Glibc
#endif

import ThumbSystem

/// A folder's identity: a folder removed, or replaced by another of the same name, has another.
struct FolderIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(of path: String) {
        var status = stat()
        guard (try? systemCall("stat \(path)", { stat(path, &status) })) != nil, (status.st_mode & S_IFMT) == S_IFDIR else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}

/// Cache writes failing for one reason, reported once when it starts and once when it ends.
struct WriteTrouble {
    var kind: CacheError.Kind
    var reason: String
    var failedWrites = 1
}

/// What the disk cache does when it cannot write: a removed folder is recreated (with a fresh
/// index and lock: the old index lives on in an unlinked file nobody will see again), a full
/// disk is met by evicting least-recently-used thumbnails and lowering the budget to what the
/// disk holds, and anything else is reported once. The pipeline meanwhile serves from memory.
extension CacheIndex {
    /// After a failed write: true when something was repaired and the write is worth one more try.
    func repair(after error: CacheError, needingBytes: Int) -> Bool {
        state.withLock { state in
            guard state.database != nil else { return false }
            if recreateFolderIfGone(&state) { return true }
            if error.kind == .diskFull { return makeRoom(&state, needingBytes: needingBytes, reason: error.description) }
            return false
        }
    }

    /// When the folder is gone (or another took its name): creates it again, takes its lock
    /// again and starts an empty index, logging what the old index held. True when recreated.
    func recreateFolderIfGone(_ state: inout State) -> Bool {
        let current = FolderIdentity(of: directory)
        guard state.database != nil, current == nil || current != state.folder else { return false }
        let lost = (entries: state.entryCount, bytes: state.totalBytes)
        state.database?.close()
        state.database = nil
        state.lock?.release()
        state.lock = nil
        do throws(CacheError) {
            do {
                try CacheFiles.createDirectories(directory)
            } catch {
                throw CacheFiles.cacheError(error)
            }
            let lock = try CacheLock(directory: directory)
            var fresh = try Self.openState(directory: directory, budget: min(byteBudget, state.budgetCap), log: log)
            fresh.lock = lock
            fresh.budgetCap = state.budgetCap
            fresh.trouble = state.trouble
            state = fresh
            reconcileFilesLocked(&state)
            log.warning("cache folder \(directory) was removed: recreated it with an empty index; the \(lost.entries) thumbnails "
                        + "(\(lost.bytes) bytes) the old index held are gone and will be rendered again when asked for")
            return true
        } catch {
            log.warning("cache folder \(directory) was removed and cannot be recreated (\(error)): the disk cache is off, "
                        + "thumbnails are served from memory")
            return false
        }
    }

    /// The disk is full: the budget becomes nine tenths of what the cache held when it filled
    /// (the rest is room for the index and whatever else shares the disk), and the least
    /// recently used thumbnails go until the one being written fits under it — files first, as
    /// the index's own writes need the room they give back. The WAL is checkpointed and
    /// truncated too. Logged at warning the first time, at notice after.
    func makeRoom(_ state: inout State, needingBytes: Int, reason: String) -> Bool {
        guard let database = state.database else { return false }
        let held = state.totalBytes
        let needed = max(1, needingBytes)
        let cap = max(held - held / 10, needed)
        let goal = max(0, cap - needed)
        var victims: [(digest: String, relative: String, size: Int)] = []
        var freed = 0
        do throws(SQLiteError) {
            if held > goal {
                try database.query("SELECT digest, file_path, bytes FROM entries ORDER BY last_use ASC LIMIT 4096") { row in
                    guard held - freed > goal else { return }
                    victims.append((row.text(0), row.text(1), row.int(2)))
                    freed += row.int(2)
                }
            }
        } catch {
            return false
        }
        for victim in victims { CacheFiles.remove(directory + "/" + victim.relative) }
        if !victims.isEmpty {
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for victim in victims { try database.execute("DELETE FROM entries WHERE digest = ?", [.text(victim.digest)]) }
                }
                state.totalBytes -= freed
                state.entryCount -= victims.count
            } catch {
                // The rows stay until a look-up finds their files gone (each is then dropped).
            }
        }
        _ = try? database.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        let first = state.budgetCap == .max
        state.budgetCap = min(state.budgetCap, cap)
        let message = "cache disk full (\(reason)): evicted \(victims.count) thumbnails (\(freed) bytes); "
            + "the disk cache now keeps at most \(state.budgetCap) bytes (configured \(byteBudget))"
        if first { log.warning(message) } else { log.notice(message) }
        return true
    }

    /// Once the disk has filled, room is made before a file is written, not after: the cache
    /// must not need more than its capped budget on disk at any moment.
    func makeRoomBeforeWriting(_ bytes: Int) {
        state.withLock { state in
            let budget = min(byteBudget, state.budgetCap)
            guard state.budgetCap != .max, state.totalBytes + bytes > budget else { return }
            do throws(SQLiteError) {
                try Self.evict(&state, budget: max(0, budget - bytes), directory: directory)
            } catch {
                recover(from: error, &state)
            }
        }
    }

    /// A write failed for good: the first of an episode (or of a new reason) is logged.
    func noteWriteFailure(_ error: CacheError) {
        state.withLock { state in
            if var trouble = state.trouble, trouble.kind == error.kind {
                trouble.failedWrites += 1
                state.trouble = trouble
                return
            }
            state.trouble = WriteTrouble(kind: error.kind, reason: error.description)
            log.warning("cache writes are failing (\(error)): thumbnails are served from memory, without a cache file, "
                        + "until a write succeeds again")
        }
    }

    /// A write succeeded: an episode that was going on is over.
    func noteWriteSuccess() {
        state.withLock { state in
            guard let trouble = state.trouble else { return }
            state.trouble = nil
            log.notice("cache writes succeed again, after \(trouble.failedWrites) failed (\(trouble.reason))")
        }
    }
}
