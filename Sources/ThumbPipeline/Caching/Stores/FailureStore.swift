/// What the render stage asks of remembered failures (`FailureStore`; tests substitute it).
package protocol FailureRemembering: AnyObject, Sendable {
    /// Remembers that `version` of an asset could not be rendered (replacing an older failure
    /// of the same asset).
    func recordFailure(_ version: AssetVersion, record: NegativeRecord, reason: String)
    /// The recorded failure of exactly this version of the asset; nil when there is none, the
    /// file has changed since (it is then tried again), or the record is of no known kind.
    func failure(for version: AssetVersion) -> ThumbFailure?
}

/// Negative entries: assets that could not be rendered, remembered per version so a broken
/// file is not decoded again and again, and tried again once it changes. Which failures are
/// remembered, and as what, is `ThumbFailure.disposition`'s call; the record is stored as the
/// `NegativeRecord` raw value. Removed with the asset's thumbnails (`ThumbnailStore`).
package final class FailureStore: FailureRemembering {
    let index: CacheIndex

    package init(index: CacheIndex) {
        self.index = index
    }

    package func recordFailure(_ version: AssetVersion, record: NegativeRecord, reason: String) {
        index.withDatabase(closed: (), failed: ()) { database, _ throws(SQLiteError) in
            _ = try database.execute("INSERT OR REPLACE INTO failures (asset_path, version, record, reason) VALUES (?, ?, ?, ?)",
                                 [.text(version.path), .text(version.description), .integer(Int64(record.rawValue)), .text(reason)])
        }
    }

    package func failure(for version: AssetVersion) -> ThumbFailure? {
        index.withDatabase(closed: nil, failed: nil) { database, _ throws(SQLiteError) -> ThumbFailure? in
            var found: ThumbFailure?
            try database.query("SELECT record, reason FROM failures WHERE asset_path = ? AND version = ?",
                               [.text(version.path), .text(version.description)]) { row in
                found = NegativeRecord(rawValue: Int(clamping: row.integer(0))).map { $0.failure(reason: row.text(1)) }
            }
            return found
        }
    }
}
