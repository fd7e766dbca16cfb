import Synchronization
package import ThumbImaging
import ThumbSystem

/// Every asset's focus (schema 4's `focus` table), as its owner set it: kept across restarts and
/// across edits of the file (a re-saved image keeps its composition), gone with the asset.
///
/// A request for a kind whose crop follows the focus looks it up before it can form its key, so
/// the table is mirrored in memory (`mirror`, loaded from the index at the first look-up):
/// the look-up takes neither the index's lock nor a query. Writes go to the index first, then
/// to the mirror, both under the index's lock (lock order: index, then mirror).
///
/// Setting or removing a focus drops the asset's focus-cropped thumbnails in the same
/// transaction (their keys can never be asked for again).
package final class FocusStore: FocusKeeping {
    let index: CacheIndex
    /// The mirror, by asset path as bytes (two spellings of a name are two files); nil until loaded.
    private let mirror = Mutex<[ExactPath: FocusRegion]?>(nil)

    package init(index: CacheIndex) {
        self.index = index
    }

    /// The asset's focus, or nil when it has none (or the index is closed).
    package func focus(ofAsset assetPath: String) -> FocusRegion? {
        if let loaded = mirror.withLock({ $0.map { $0[ExactPath(assetPath)] } }) { return loaded }
        return index.state.withLock { state in loadedMirror(&state)[ExactPath(assetPath)] }
    }

    /// How many assets have a focus.
    package var count: Int {
        if let count = mirror.withLock({ $0?.count }) { return count }
        return index.state.withLock { state in loadedMirror(&state).count }
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
        } memo: { $0[ExactPath(assetPath)] = focus }
        return result.dropped
    }

    /// Removes the asset's focus (and its thumbnails cropped around it). False when it had none.
    @discardableResult
    package func removeFocus(ofAsset assetPath: String) throws(CacheError) -> Bool {
        let result = try changeFocus(of: assetPath, operation: "remove the focus of \(assetPath)") { database throws(SQLiteError) in
            try database.execute("DELETE FROM focus WHERE asset_path = ?", [.text(assetPath)]) > 0
        } memo: { $0[ExactPath(assetPath)] = nil }
        return result.changed
    }

    /// The focus of removed assets (the removal batch): one statement per asset that has one,
    /// none at all (no transaction either) when none of them has — the usual case.
    package func removeFocus(ofAssets assetPaths: [String]) {
        index.state.withLock { state in
            let memo = loadedMirror(&state)
            let having = assetPaths.filter { memo[ExactPath($0)] != nil }
            guard !having.isEmpty, let database = state.database else { return }
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    for path in having { try database.execute("DELETE FROM focus WHERE asset_path = ?", [.text(path)]) }
                }
            } catch {
                index.recover(from: error, &state)
                return
            }
            mirror.withLock { regions in for path in having { regions?[ExactPath(path)] = nil } }
        }
    }

    /// The focus of every asset under a removed folder ("" is the root): one range of the table.
    package func removeFocus(under folder: String) {
        let (condition, bounds) = CacheIndex.rangeCondition(under: folder)
        var prefix = Substring(folder)
        while prefix.utf8.last == UInt8(ascii: "/") { prefix = Substring(prefix.utf8.dropLast()) }
        let folderPath = String(prefix)
        let inside: (ExactPath) -> Bool = { $0.text.isPath(under: folderPath) }
        index.state.withLock { state in
            guard loadedMirror(&state).keys.contains(where: inside), let database = state.database else { return }
            do throws(SQLiteError) {
                try database.execute("DELETE FROM focus WHERE \(condition)", bounds)
            } catch {
                index.recover(from: error, &state)
                return
            }
            mirror.withLock { regions in regions = regions?.filter { !inside($0.key) } }
        }
    }

    /// Every asset path with a focus (the start-up reconcile checks they still exist).
    package func assetPathsWithFocus() -> [String] {
        index.state.withLock { state in loadedMirror(&state).keys.map(\.text).sorted() }
    }

    /// One change of the focus table and the asset's focus-cropped rows, in one transaction.
    private func changeFocus(of assetPath: String, operation: String, _ change: (SQLiteDatabase) throws(SQLiteError) -> Bool,
                             memo: (inout [ExactPath: FocusRegion]) -> Void) throws(CacheError) -> (changed: Bool, dropped: Int) {
        try index.state.withLock { (state: inout CacheIndex.State) throws(CacheError) -> (changed: Bool, dropped: Int) in
            _ = loadedMirror(&state)
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
                index.recover(from: error, &state)
                throw CacheFiles.cacheError(operation, error)
            }
            _ = index.retire(files, of: [ExactPath(assetPath)], &state)
            mirror.withLock { regions in
                var loaded = regions ?? [:]
                memo(&loaded)
                regions = loaded
            }
            return (changed, files.count)
        }
    }

    /// The mirror, loaded from the index if it was not yet (with the index's lock held). A
    /// row that breaks `FocusRegion`'s ranges (edited by hand) is left out: no crop trusts it.
    private func loadedMirror(_ state: inout CacheIndex.State) -> [ExactPath: FocusRegion] {
        if let loaded = mirror.withLock({ $0 }) { return loaded }
        guard let database = state.database else { return [:] }
        var regions: [ExactPath: FocusRegion] = [:]
        do throws(SQLiteError) {
            try database.query("SELECT asset_path, x, y, width, height FROM focus") { row in
                if let focus = FocusRegion(x: row.double(1), y: row.double(2), width: row.double(3), height: row.double(4)) {
                    regions[ExactPath(row.text(0))] = focus
                }
            }
        } catch {
            index.recover(from: error, &state)
            return [:]
        }
        mirror.withLock { $0 = regions }
        return regions
    }
}

/// What the focus part asks of the index (`FocusStore`; tests substitute it).
package protocol FocusKeeping: AnyObject, Sendable {
    /// The asset's focus, or nil when it has none.
    func focus(ofAsset assetPath: String) -> FocusRegion?
    /// Stores the asset's focus; returns how many focus-cropped thumbnails that dropped.
    @discardableResult
    func setFocus(_ focus: FocusRegion, ofAsset assetPath: String) throws(CacheError) -> Int
    /// Removes the asset's focus; false when it had none.
    @discardableResult
    func removeFocus(ofAsset assetPath: String) throws(CacheError) -> Bool
    /// The focus of removed assets, and of every asset under a removed folder.
    func removeFocus(ofAssets assetPaths: [String])
    func removeFocus(under folder: String)
    /// Every asset path with a focus.
    func assetPathsWithFocus() -> [String]
}
