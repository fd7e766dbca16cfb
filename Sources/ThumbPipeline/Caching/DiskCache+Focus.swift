import Synchronization
package import ThumbImaging

/// Every asset's focus (schema 4's `focus` table), as its owner set it: kept across restarts and
/// across edits of the file (a re-saved image keeps its composition), gone with the asset.
///
/// A request for a kind whose crop follows the focus looks it up before it can form its key, so
/// the table is mirrored in memory (`FocusMemo`, loaded from the index at the first look-up):
/// the look-up takes neither the index's lock nor a query. Writes go to the index first, then
/// to the mirror, both under the index's lock (lock order: index, then mirror).
final class FocusMemo: Sendable {
    /// nil until loaded.
    let regions = Mutex<[String: FocusRegion]?>(nil)
}

extension DiskCache {
    /// The asset's focus, or nil when it has none (or the index is closed).
    package func focus(ofAsset assetPath: String) -> FocusRegion? {
        if let loaded = focusMemo.regions.withLock({ $0.map { $0[assetPath] } }) { return loaded }
        return state.withLock { state in loadFocusMemo(&state)[assetPath] }
    }

    /// How many assets have a focus.
    package var focusCount: Int {
        if let count = focusMemo.regions.withLock({ $0?.count }) { return count }
        return state.withLock { state in loadFocusMemo(&state).count }
    }

    /// Stores the asset's focus (replacing any) and, in the same transaction, drops its cached
    /// thumbnails cropped around a focus (their keys held the old one or none: they could never
    /// be served again). Returns how many were dropped.
    @discardableResult
    package func setFocus(_ focus: FocusRegion, ofAsset assetPath: String) throws(CacheError) -> Int {
        let result = try changeFocus(of: assetPath, operation: "set the focus of \(assetPath)") { database throws(SQLiteError) in
            try database.execute("INSERT OR REPLACE INTO focus (asset_path, x, y, width, height) VALUES (?, ?, ?, ?, ?)",
                                 [.text(assetPath), .real(focus.x), .real(focus.y), .real(focus.width), .real(focus.height)])
            return true
        } memo: { $0[assetPath] = focus }
        return result.dropped
    }

    /// Removes the asset's focus (and its thumbnails cropped around it). False when it had none.
    @discardableResult
    package func removeFocus(ofAsset assetPath: String) throws(CacheError) -> Bool {
        let result = try changeFocus(of: assetPath, operation: "remove the focus of \(assetPath)") { database throws(SQLiteError) in
            try database.execute("DELETE FROM focus WHERE asset_path = ?", [.text(assetPath)]) > 0
        } memo: { $0[assetPath] = nil }
        return result.changed
    }

    /// The focus of removed assets (the removal batch): one statement per asset that has one,
    /// none at all (no transaction either) when none of them has — the usual case.
    func removeFocus(ofAssets assetPaths: [String]) {
        state.withLock { state in
            let memo = loadFocusMemo(&state)
            let having = assetPaths.filter { memo[$0] != nil }
            guard !having.isEmpty, let database = state.database else { return }
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for path in having { try database.execute("DELETE FROM focus WHERE asset_path = ?", [.text(path)]) }
                }
            } catch {
                recover(from: error, &state)
                return
            }
            focusMemo.regions.withLock { regions in for path in having { regions?[path] = nil } }
        }
    }

    /// The focus of every asset under a removed folder ("" is the root): one range of the table.
    func removeFocus(under folder: String) {
        let (condition, bounds) = Self.rangeCondition(under: folder)
        var prefix = Substring(folder)
        while prefix.hasSuffix("/") { prefix = prefix.dropLast() }
        let inside: (String) -> Bool = { prefix.isEmpty || $0.hasPrefix(prefix + "/") }
        state.withLock { state in
            guard loadFocusMemo(&state).keys.contains(where: inside), let database = state.database else { return }
            do throws(SQLiteError) {
                try database.execute("DELETE FROM focus WHERE \(condition)", bounds)
            } catch {
                recover(from: error, &state)
                return
            }
            focusMemo.regions.withLock { regions in regions = regions?.filter { !inside($0.key) } }
        }
    }

    /// Every asset path with a focus (the start-up reconcile checks they still exist).
    func assetPathsWithFocus() -> [String] {
        state.withLock { state in loadFocusMemo(&state).keys.sorted() }
    }

    /// One change of the focus table and the asset's focus-cropped rows, in one transaction.
    private func changeFocus(of assetPath: String, operation: String, _ change: (SQLiteDatabase) throws(SQLiteError) -> Bool,
                             memo: (inout [String: FocusRegion]) -> Void) throws(CacheError) -> (changed: Bool, dropped: Int) {
        try state.withLock { (state: inout State) throws(CacheError) -> (changed: Bool, dropped: Int) in
            _ = loadFocusMemo(&state)
            guard let database = state.database else { throw CacheError(operation: operation, reason: "the cache is closed") }
            var files: [(relative: String, size: Int)] = []
            var changed = false
            let matching = "FROM entries WHERE asset_path = ? AND instr(descriptor, ?) > 0"
            let values: [SQLiteValue] = [.text(assetPath), .text(CacheKey.focusCropMarker)]
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    changed = try change(database)
                    try database.query("SELECT file_path, bytes \(matching)", values) { files.append(($0.text(0), $0.int(1))) }
                    try database.execute("DELETE \(matching)", values)
                }
            } catch {
                recover(from: error, &state)
                throw DiskCacheFiles.cacheError(operation, error)
            }
            for file in files {
                reaper.retire(directory + "/" + file.relative)
                state.totalBytes -= file.size
                state.entryCount -= 1
            }
            focusMemo.regions.withLock { regions in
                var loaded = regions ?? [:]
                memo(&loaded)
                regions = loaded
            }
            return (changed, files.count)
        }
    }

    /// The mirror, loaded from the index if it was not yet (with the index's lock held). A
    /// row that breaks `FocusRegion`'s ranges (edited by hand) is left out: no crop trusts it.
    private func loadFocusMemo(_ state: inout State) -> [String: FocusRegion] {
        if let loaded = focusMemo.regions.withLock({ $0 }) { return loaded }
        guard let database = state.database else { return [:] }
        var regions: [String: FocusRegion] = [:]
        do throws(SQLiteError) {
            try database.query("SELECT asset_path, x, y, width, height FROM focus") { row in
                if let focus = FocusRegion(x: row.double(1), y: row.double(2), width: row.double(3), height: row.double(4)) {
                    regions[row.text(0)] = focus
                }
            }
        } catch {
            recover(from: error, &state)
            return [:]
        }
        focusMemo.regions.withLock { $0 = regions }
        return regions
    }
}
