/// The asset folder as the index lists it (schema 6's `assets` table), for `GET /v1/assets`: a
/// page in byte order of the path is one range of the table, whatever the folder's size,
/// without a walk of the folder per request. The asset reconciles add what they find and drop
/// what is gone; the watcher adds changed files and drops removed ones and removed folders. A
/// path is listed from the moment its file is seen until its removal is handled.
package final class AssetListStore: AssetListing {
    let index: CacheIndex

    package init(index: CacheIndex) {
        self.index = index
    }

    /// Paths a page holds at most (the HTTP door's `limit` is at most this).
    package static let maxPageLength = 1000

    /// Lists these paths (present ones stay): one transaction.
    package func add(_ assetPaths: [String]) {
        guard !assetPaths.isEmpty else { return }
        write(assetPaths.map { ("INSERT OR IGNORE INTO assets (asset_path) VALUES (?)", [.text($0)]) })
    }

    /// Unlists these paths: one transaction.
    package func remove(_ assetPaths: [String]) {
        guard !assetPaths.isEmpty else { return }
        write(assetPaths.map { ("DELETE FROM assets WHERE asset_path = ?", [.text($0)]) })
    }

    /// Unlists every path under a removed folder ("" is the root): one range.
    package func remove(under folder: String) {
        let (condition, bounds) = CacheIndex.rangeCondition(under: folder)
        write([("DELETE FROM assets WHERE \(condition)", bounds)])
    }

    /// Up to `limit` listed paths that start with `prefix` and sort after `after`, in byte order.
    /// Byte order is SQLite's BINARY collation of the UTF-8 text (memcmp), the same order as
    /// `CacheIndex.precedes`: a page ends where the next `after` begins.
    package func page(prefix: String, after: String, limit: Int) -> [String] {
        let limit = min(max(limit, 0), Self.maxPageLength)
        guard limit > 0 else { return [] }
        return index.state.withLock { (state: inout CacheIndex.State) -> [String] in
            guard let database = state.database else { return [] }
            var paths: [String] = []
            do throws(SQLiteError) {
                // The paths with the prefix are one run of the order, starting at the prefix:
                // the run ends at the first path without it.
                var ended = false
                try database.query("SELECT asset_path FROM assets WHERE asset_path >= ? AND asset_path > ? ORDER BY asset_path LIMIT ?",
                                   [.text(prefix), .text(after), .integer(Int64(limit))]) { row in
                    guard !ended else { return }
                    let path = row.text(0)
                    if path.utf8.starts(with: prefix.utf8) { paths.append(path) } else { ended = true }
                }
            } catch {
                index.recover(from: error, &state)
                return []
            }
            return paths
        }
    }

    /// How many paths are listed.
    package var count: Int {
        index.state.withLock { state in
            guard let database = state.database else { return 0 }
            return (try? database.scalar("SELECT count(*) FROM assets")).map { Int($0) } ?? 0
        }
    }

    /// Runs the statements in one transaction.
    private func write(_ statements: [(sql: String, values: [SQLiteValue])]) {
        index.state.withLock { state in
            guard let database = state.database else { return }
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for statement in statements { try database.execute(statement.sql, statement.values) }
                }
            } catch {
                index.recover(from: error, &state)
            }
        }
    }
}

/// The asset listing, as the follower keeps it and the API pages it (`AssetListStore`).
package protocol AssetListing: AnyObject, Sendable {
    func add(_ assetPaths: [String])
    func remove(_ assetPaths: [String])
    func remove(under folder: String)
    func page(prefix: String, after: String, limit: Int) -> [String]
}
