/// Negative entries: assets that could not be rendered, remembered per version so a broken
/// file is not decoded again and again, and tried again once it changes.
extension DiskCache {
    /// Remembers that `version` of an asset could not be rendered (replacing an older failure
    /// of the same asset).
    public func recordFailure(_ version: AssetVersion, kind: String, reason: String) {
        state.withLock { state in
            guard let database = state.database else { return }
            do throws(SQLiteError) {
                try database.execute("INSERT OR REPLACE INTO failures (asset_path, version, kind, reason) VALUES (?, ?, ?, ?)",
                                     [.text(version.path), .text(version.description), .text(kind), .text(reason)])
            } catch {
                recover(from: error, &state)
            }
        }
    }

    /// The recorded failure of exactly this version of the asset; nil when there is none or the
    /// file has changed since (it is then tried again).
    public func failure(for version: AssetVersion) -> (kind: String, reason: String)? {
        state.withLock { (state: inout State) -> (kind: String, reason: String)? in
            guard let database = state.database else { return nil }
            var found: (kind: String, reason: String)?
            do throws(SQLiteError) {
                try database.query("SELECT kind, reason FROM failures WHERE asset_path = ? AND version = ?",
                                   [.text(version.path), .text(version.description)]) { found = ($0.text(0), $0.text(1)) }
            } catch {
                recover(from: error, &state)
                return nil
            }
            return found
        }
    }
}
