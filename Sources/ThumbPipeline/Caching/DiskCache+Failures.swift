/// Negative entries: assets that could not be rendered, remembered per version so a broken
/// file is not decoded again and again, and tried again once it changes. Which failures are
/// remembered, and as what, is `ThumbFailure.disposition`'s call; the record is stored as the
/// `NegativeRecord` raw value.
extension DiskCache {
    /// Remembers that `version` of an asset could not be rendered (replacing an older failure
    /// of the same asset).
    package func recordFailure(_ version: AssetVersion, record: NegativeRecord, reason: String) {
        state.withLock { state in
            guard let database = state.database else { return }
            do throws(SQLiteError) {
                try database.execute("INSERT OR REPLACE INTO failures (asset_path, version, record, reason) VALUES (?, ?, ?, ?)",
                                     [.text(version.path), .text(version.description), .integer(Int64(record.rawValue)), .text(reason)])
            } catch {
                recover(from: error, &state)
            }
        }
    }

    /// The recorded failure of exactly this version of the asset; nil when there is none, the
    /// file has changed since (it is then tried again), or the record is of no known kind.
    package func failure(for version: AssetVersion) -> ThumbFailure? {
        state.withLock { (state: inout State) -> ThumbFailure? in
            guard let database = state.database else { return nil }
            var found: ThumbFailure?
            do throws(SQLiteError) {
                try database.query("SELECT record, reason FROM failures WHERE asset_path = ? AND version = ?",
                                   [.text(version.path), .text(version.description)]) { row in
                    found = NegativeRecord(rawValue: Int(clamping: row.integer(0))).map { $0.failure(reason: row.text(1)) }
                }
            } catch {
                recover(from: error, &state)
                return nil
            }
            return found
        }
    }
}
