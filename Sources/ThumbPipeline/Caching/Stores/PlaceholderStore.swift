package import ThumbImaging
package import ThumbSystem

/// A placeholder as the index keeps it: valid for the one asset version it was computed from.
package struct StoredPlaceholder: Sendable, Equatable {
    /// `AssetVersion.description` of the decoded file.
    package var version: String
    package var placeholder: Placeholder
    /// Where attention placed this version's crops, one a shape.
    package var placements: [AttentionPlacement]

    package init(version: String, placeholder: Placeholder, placements: [AttentionPlacement] = []) {
        self.version = version
        self.placeholder = placeholder
        self.placements = placements
    }
}

/// The `placeholders` table (schema 5): one row an asset path, replaced when another version of
/// the file is decoded, removed with the asset (`removeThumbnails(ofAssets:)`, `(under:)`); the
/// version's attention placements live in the same row, so they go with it.
package final class PlaceholderStore: PlaceholderKeeping {
    let index: CacheIndex

    package init(index: CacheIndex) {
        self.index = index
    }

    /// Paths a batch look-up takes at most (the HTTP door allows fewer).
    package static let maxPlaceholderLookupPaths = 1000

    /// Stores (or replaces) the placeholder of `asset`'s version, with `placements`. A row of the
    /// same version keeps the placements it has (two decodes of a new version may race here, each
    /// having placed its own shapes). A hash that does not fit the format is refused rather than stored.
    package func store(_ placeholder: Placeholder, placements: [AttentionPlacement] = [], of asset: AssetVersion) {
        guard (5...ThumbHash.maxBytes).contains(placeholder.thumbHash.count) else { return }
        let packed = Int64(placeholder.averageRed) << 24 | Int64(placeholder.averageGreen) << 16
            | Int64(placeholder.averageBlue) << 8 | Int64(placeholder.averageAlpha)
        index.state.withLock { state in
            guard let database = state.database else { return }
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    var merged: [AttentionPlacement] = []
                    try database.query("SELECT placements FROM placeholders WHERE asset_path = ? AND version = ?",
                                       [.text(asset.path), .text(asset.description)]) { merged = Self.placements(text: $0.text(0)) }
                    for placement in placements where !merged.contains(where: { $0.shape == placement.shape }) {
                        merged.append(placement)
                    }
                    try database.execute(
                        "INSERT OR REPLACE INTO placeholders (asset_path, version, thumbhash, average_rgba, placements) VALUES (?, ?, ?, ?, ?)",
                        [.text(asset.path), .text(asset.description), .blob(placeholder.thumbHash), .integer(packed),
                         .text(Self.placementsText(merged))])
                }
            } catch {
                index.recover(from: error, &state)
            }
        }
    }

    /// The placeholder of exactly this version, or nil (none yet, or one of another version).
    package func placeholder(of asset: AssetVersion) -> Placeholder? {
        guard let stored = stored(ofAssets: [asset.path])[ExactPath(asset.path)], stored.version == asset.description else { return nil }
        return stored.placeholder
    }

    /// The stored rows of these paths, whatever version they belong to (the caller compares
    /// with the version it resolved): one prepared statement reused under one lock. By path as
    /// bytes, as SQLite compares them: NFC and NFD twins are two rows.
    package func stored(ofAssets paths: [String]) -> [ExactPath: StoredPlaceholder] {
        index.state.withLock { (state: inout CacheIndex.State) -> [ExactPath: StoredPlaceholder] in
            guard let database = state.database else { return [:] }
            var found: [ExactPath: StoredPlaceholder] = [:]
            do throws(SQLiteError) {
                for path in paths.prefix(Self.maxPlaceholderLookupPaths) where found[ExactPath(path)] == nil {
                    try database.query("SELECT version, thumbhash, average_rgba, placements FROM placeholders WHERE asset_path = ?",
                                       [.text(path)]) { row in
                        if let placeholder = Self.placeholder(hash: row.blob(1), packed: row.integer(2)) {
                            found[ExactPath(path)] = StoredPlaceholder(version: row.text(0), placeholder: placeholder,
                                                            placements: Self.placements(text: row.text(3)))
                        }
                    }
                }
            } catch {
                index.recover(from: error, &state)
                return [:]
            }
            return found
        }
    }

    /// Adds placements to the row of exactly `asset`'s version (a shape already placed keeps its
    /// place); none is stored without that row: a decode that places a crop reads the whole
    /// frame, so the version's first one also wrote the row.
    package func addPlacements(_ placements: [AttentionPlacement], of asset: AssetVersion) {
        guard !placements.isEmpty else { return }
        index.state.withLock { state in
            guard let database = state.database else { return }
            do throws(SQLiteError) {
                try database.transaction { () throws(SQLiteError) in
                    var stored: String?
                    try database.query("SELECT placements FROM placeholders WHERE asset_path = ? AND version = ?",
                                       [.text(asset.path), .text(asset.description)]) { stored = $0.text(0) }
                    guard let stored else { return }
                    var merged = Self.placements(text: stored)
                    for placement in placements where !merged.contains(where: { $0.shape == placement.shape }) {
                        merged.append(placement)
                    }
                    try database.execute("UPDATE placeholders SET placements = ? WHERE asset_path = ? AND version = ?",
                                         [.text(Self.placementsText(merged)), .text(asset.path), .text(asset.description)])
                }
            } catch {
                index.recover(from: error, &state)
            }
        }
    }

    /// Shapes one row keeps at most: a deployment has a handful of attention kinds and scales.
    static let maxPlacementsPerVersion = 64

    /// `shape x y` entries joined by `;`, the centre in Swift's shortest round-tripping decimals.
    static func placementsText(_ placements: [AttentionPlacement]) -> String {
        placements.prefix(maxPlacementsPerVersion).map { "\($0.shape) \($0.centre.x) \($0.centre.y)" }.joined(separator: ";")
    }

    /// The inverse; an entry that does not parse (a damaged row) is skipped, so that shape is
    /// placed again by its next render.
    static func placements(text: String) -> [AttentionPlacement] {
        var placements: [AttentionPlacement] = []
        // What the writer can produce at most: a damaged row's length does not set the work.
        let limit = maxPlacementsPerVersion * (AttentionPlacement.maxShapeBytes + 64)
        let written = text.utf8.count > limit ? String(decoding: text.utf8.prefix(limit), as: UTF8.self) : text
        for entry in written.split(separator: ";").prefix(maxPlacementsPerVersion) {
            let fields = entry.split(separator: " ")
            guard fields.count == 3, fields[0].utf8.count <= AttentionPlacement.maxShapeBytes,
                  let x = Double(fields[1]), let y = Double(fields[2]), let centre = FocusRegion(x: x, y: y),
                  !placements.contains(where: { $0.shape == fields[0] }) else { continue }
            placements.append(AttentionPlacement(shape: String(fields[0]), centre: centre))
        }
        return placements
    }

    /// Number of stored placeholders (for tests and metrics).
    package var count: Int {
        index.state.withLock { (state: inout CacheIndex.State) -> Int in
            guard let database = state.database else { return 0 }
            return Int((try? database.scalar("SELECT count(*) FROM placeholders")) ?? 0)
        }
    }

    /// A row back to a value; a damaged row (a hash outside the format, a colour outside 32
    /// bits) reads as none, so it is computed again.
    static func placeholder(hash: [UInt8], packed: Int64) -> Placeholder? {
        guard (5...ThumbHash.maxBytes).contains(hash.count), (0...0xFFFF_FFFF).contains(packed) else { return nil }
        return Placeholder(thumbHash: hash, averageRed: UInt8(packed >> 24 & 255), averageGreen: UInt8(packed >> 16 & 255),
                           averageBlue: UInt8(packed >> 8 & 255), averageAlpha: UInt8(packed & 255))
    }
}

extension PlaceholderStore {
    /// Drops a placeholder row as an index from before schema 4 would lack it (tests only).
    func removeForTesting(of path: String) {
        index.state.withLock { state in
            _ = try? state.database?.execute("DELETE FROM placeholders WHERE asset_path = ?", [.text(path)])
        }
    }
}

/// What placeholders and attention placements ask of the index (`PlaceholderStore`; tests
/// substitute it).
package protocol PlaceholderKeeping: AnyObject, Sendable {
    /// Stores (or replaces) the placeholder of `asset`'s version, with `placements`.
    func store(_ placeholder: Placeholder, placements: [AttentionPlacement], of asset: AssetVersion)
    /// The placeholder of exactly this version, or nil.
    func placeholder(of asset: AssetVersion) -> Placeholder?
    /// The stored rows of these paths, whatever version they belong to.
    func stored(ofAssets paths: [String]) -> [ExactPath: StoredPlaceholder]
    /// Adds placements to the row of exactly `asset`'s version.
    func addPlacements(_ placements: [AttentionPlacement], of asset: AssetVersion)
}
