/// The pre-render backlog: assets whose pre-renders are still to be done, kept in the index so
/// that none is dropped when the in-memory job queue is full and none is lost by a restart or
/// a crash. The pipeline adds rows (watcher events, the asset reconcile), takes them in
/// `enqueued` order as its queue has room for batch work, and deletes each once its
/// pre-renders are done or found unnecessary. A row taken again after a crash costs at most a
/// look-up: what was rendered is cached.
///
/// `enqueued` is a sequence number, continued from the index's maximum at open: adding an asset
/// that is already there moves it to the back under a new number, so a pre-render of an older
/// version that finishes meanwhile does not delete the newer version's row.
///
/// The row count and sequence live in the index's state (`BacklogCounts`): they change with the
/// rows, under the same lock, and a rebuilt index reloads them.
package final class BacklogStore: BacklogKeeping {
    let index: CacheIndex

    package init(index: CacheIndex) {
        self.index = index
    }

    /// Adds each asset to the backlog (one transaction). One that is there already is moved to
    /// the back when `movesExisting` (the asset changed: a pre-render of the older version that
    /// finishes meanwhile must not settle the row), else left where it is (a reconcile finding
    /// it missing again). New rows past `maxRows` are refused: the first refusal of an episode
    /// is logged, and the episode's end (room again) too. Returns the rows added and refused.
    @discardableResult
    package func enqueue(_ paths: [String], maxRows: Int, movesExisting: Bool = true) -> (added: Int, refused: Int) {
        guard !paths.isEmpty else { return (0, 0) }
        return index.state.withLock { (state: inout CacheIndex.State) -> (added: Int, refused: Int) in
            guard let database = state.database else { return (0, paths.count) }
            var next = state.backlog
            var added = 0, refused = 0
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for path in paths {
                        next.lastSequence += 1
                        if movesExisting {
                            let moved = try database.execute("UPDATE backlog SET enqueued = ?, attempts = 0 WHERE asset_path = ?",
                                                             [.integer(next.lastSequence), .text(path)])
                            if moved > 0 { continue }
                        } else if try database.scalar("SELECT 1 FROM backlog WHERE asset_path = ?", [.text(path)]) != nil {
                            continue
                        }
                        guard next.rows < maxRows else {
                            refused += 1
                            continue
                        }
                        try database.execute("INSERT INTO backlog (asset_path, enqueued, attempts) VALUES (?, ?, 0)",
                                             [.text(path), .integer(next.lastSequence)])
                        next.rows += 1
                        added += 1
                    }
                }
            } catch {
                index.recover(from: error, &state)
                return (0, paths.count)
            }
            if refused > 0 {
                if next.refusedInEpisode == nil {
                    index.log.warning("pre-render backlog full (\(maxRows) assets): new assets are not queued for pre-rendering until it "
                                + "drains (they are rendered when asked for, and a restart's reconcile queues them again)")
                }
                next.refusedInEpisode = (next.refusedInEpisode ?? 0) + refused
            }
            state.backlog = next
            return (added, refused)
        }
    }

    /// Up to `limit` rows after sequence `after` (0: from the start), oldest first.
    package func batch(after: Int64, limit: Int) -> [BacklogRow] {
        index.state.withLock { (state: inout CacheIndex.State) -> [BacklogRow] in
            guard let database = state.database, limit > 0 else { return [] }
            var rows: [BacklogRow] = []
            do throws(SQLiteError) {
                try database.query("SELECT asset_path, enqueued, attempts FROM backlog WHERE enqueued > ? ORDER BY enqueued LIMIT ?",
                                   [.integer(after), .integer(Int64(limit))]) { row in
                    rows.append(BacklogRow(assetPath: row.text(0), sequence: row.integer(1), attempts: row.int(2)))
                }
            } catch {
                index.recover(from: error, &state)
            }
            return rows
        }
    }

    /// The row's pre-renders are done (or unnecessary): it goes, unless the asset was added
    /// again meanwhile. True when it went.
    @discardableResult
    package func finish(_ row: BacklogRow, maxRows: Int) -> Bool {
        index.state.withLock { (state: inout CacheIndex.State) -> Bool in
            guard let database = state.database else { return false }
            do throws(SQLiteError) {
                let deleted = try database.execute("DELETE FROM backlog WHERE asset_path = ? AND enqueued = ?",
                                                   [.text(row.assetPath), .integer(row.sequence)])
                guard deleted > 0 else { return false }
                state.backlog.rows -= 1
                if let refused = state.backlog.refusedInEpisode, state.backlog.rows < maxRows {
                    state.backlog.refusedInEpisode = nil
                    index.log.notice("pre-render backlog has room again, after refusing \(refused) assets")
                }
                return true
            } catch {
                index.recover(from: error, &state)
                return false
            }
        }
    }

    /// The row moves to the back, with one more attempt when `countsAttempt` (a transient
    /// failure; not when only the queue was full), unless the asset was added again meanwhile.
    /// The row as it is now, or nil when it changed or went.
    package func retry(_ row: BacklogRow, countsAttempt: Bool) -> BacklogRow? {
        index.state.withLock { (state: inout CacheIndex.State) -> BacklogRow? in
            guard let database = state.database else { return nil }
            let sequence = state.backlog.lastSequence + 1
            do throws(SQLiteError) {
                let attempts = row.attempts + (countsAttempt ? 1 : 0)
                let moved = try database.execute("UPDATE backlog SET enqueued = ?, attempts = ? WHERE asset_path = ? AND enqueued = ?",
                                                  [.integer(sequence), .integer(Int64(attempts)), .text(row.assetPath), .integer(row.sequence)])
                guard moved > 0 else { return nil }
                state.backlog.lastSequence = sequence
                return BacklogRow(assetPath: row.assetPath, sequence: sequence, attempts: attempts)
            } catch {
                index.recover(from: error, &state)
                return nil
            }
        }
    }

    /// Rows waiting (including those being pre-rendered now).
    package var rowCount: Int { index.state.withLock { $0.backlog.rows } }
}

/// What the pre-render backlog asks of its rows (`BacklogStore`; tests substitute it).
package protocol BacklogKeeping: AnyObject, Sendable {
    @discardableResult
    func enqueue(_ paths: [String], maxRows: Int, movesExisting: Bool) -> (added: Int, refused: Int)
    func batch(after: Int64, limit: Int) -> [BacklogRow]
    @discardableResult
    func finish(_ row: BacklogRow, maxRows: Int) -> Bool
    func retry(_ row: BacklogRow, countsAttempt: Bool) -> BacklogRow?
    var rowCount: Int { get }
}

/// One asset waiting for its pre-renders.
package struct BacklogRow: Sendable, Equatable {
    package var assetPath: String
    /// Its place in the backlog; the row is finished or retried only while it still has it.
    package var sequence: Int64
    /// Transient failures so far.
    package var attempts: Int
}

/// The backlog's row count and the last sequence number handed out (under the index's lock).
struct BacklogCounts {
    var rows = 0
    var lastSequence: Int64 = 0
    /// Rows refused at the cap since the episode began (nil: not at the cap).
    var refusedInEpisode: Int?
}
