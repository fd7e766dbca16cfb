import ThumbImaging
import ThumbSystem

/// What stands behind a vouch: the folder watcher, while it runs. A vouch says "this asset is
/// still the version it was when resolved, because any change to it would have been reported
/// and would have dropped the vouch"; that holds only while something is watching.
protocol VouchAuthority: AnyObject, Sendable {
    /// False once the watcher stops: vouches are then dropped at the next look.
    var vouches: Bool { get }
}

/// What a request asks of an asset beside its version. With the pipeline's fixed configuration
/// the same variant of the same version is the same cache key, so a vouched asset's entry is
/// found by its variant without building the key.
struct ThumbnailVariant: Equatable, Sendable {
    var kind: SlotKind
    var scale: Int
    var format: EncoderSettings.Format?
}

extension MemoryCache {
    /// A version resolved by a request while the watcher watched its folder, and the entries of
    /// that version the requests' variants were seen to hit.
    struct Vouch {
        var version: AssetVersion
        var absolutePath: String
        var aliases: [(variant: ThumbnailVariant, slot: Int)]
        var countedBytes = 0
    }

    /// A folder with vouched assets, or an ancestor of one: how a folder's removal finds the
    /// vouches under it without a scan of them all.
    struct FolderNode {
        /// Vouched assets directly in it (full relative paths, as bytes: twins are two).
        var assets: Set<ExactPath> = []
        /// Child folders in the tree (full relative paths, as bytes).
        var subfolders: Set<ExactPath> = []
        var isEmpty: Bool { assets.isEmpty && subfolders.isEmpty }
    }

    /// Starts taking vouches that rest on `authority` (replacing any earlier one and its vouches).
    func startVouching(authority: any VouchAuthority) {
        state.withLock { state in
            state.dropAllVouches()
            state.authority = authority
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// Drops every vouch and takes no more until `startVouching`.
    func stopVouching() {
        state.withLock { state in
            state.dropAllVouches()
            state.authority = nil
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// The generation to read before resolving an asset that the request may then vouch for.
    var currentVouchGeneration: UInt64 { vouchGeneration.load(ordering: .acquiring) }

    /// The entry a vouched asset's `variant` was seen to hit, as a hit (a use for eviction), or
    /// nil: not vouched, or that variant not known, or no longer held.
    func vouchedThumbnail(assetPath: String, variant: ThumbnailVariant) -> CachedThumbnail? {
        state.withLock { state in
            // In place (a mutating look through the values' modify accessor): no copy of the record.
            guard let record = state.records.index(forKey: ExactPath(assetPath)),
                  let found = state.records.values[record].vouchedSlot(for: variant) else { return nil }
            guard let authority = state.authority, authority.vouches else {
                // The watcher stopped: what it vouched for may change unseen from now on.
                state.dropAllVouches()
                state.authority = nil
                vouchGeneration.add(1, ordering: .releasing)
                return nil
            }
            guard let slot = found, let thumbnail = state.slots[slot].thumbnail else { return nil }
            state.touch(slot)
            return thumbnail
        }
    }

    /// Records that `version` (resolved after `generation` was read) is what `variant` of the
    /// asset hit as `key`. Refused (false) when vouches were dropped since `generation` was read
    /// (an event for it may have come between its `fstat` and now), when nothing vouches, or when
    /// the entry is gone. Only assets with entries are vouched for.
    @discardableResult
    func vouch(for version: AssetVersion, absolutePath: String, variant: ThumbnailVariant, key: CacheKey,
               generation: UInt64) -> Bool {
        state.withLock { state in
            // Under the lock that every drop holds while it moves the generation: a drop either
            // came before (the generation moved: refused) or comes after (and drops this vouch).
            guard vouchGeneration.load(ordering: .acquiring) == generation, let authority = state.authority, authority.vouches,
                  key.assetPath.utf8.elementsEqual(version.path.utf8), let slot = state.index[key.digest],
                  state.slots[slot].thumbnail?.key == key, var record = state.records[ExactPath(version.path)] else { return false }
            var vouch: Vouch
            if let current = record.vouch, current.version == version {
                vouch = current
                guard !vouch.aliases.contains(where: { $0.variant == variant }) else { return true }
                state.itemBytes -= vouch.countedBytes
            } else {
                if record.vouch != nil { state.dropVouch(of: version.path, in: &record) }
                vouch = Vouch(version: version, absolutePath: absolutePath, aliases: [])
                state.addToFolders(version.path)
                state.vouchedAssets += 1
            }
            vouch.aliases.append((variant, slot))
            vouch.countedBytes = Accounting.vouchBytes(vouch)
            state.itemBytes += vouch.countedBytes
            record.vouch = vouch
            state.records[ExactPath(version.path)] = record
            state.updateTableBytes()
            return true
        }
    }

    /// A watcher event for one asset (changed or removed): its vouch goes.
    func dropVouch(ofAsset path: String) {
        state.withLock { state in
            if var record = state.records[ExactPath(path)], record.vouch != nil {
                state.dropVouch(of: path, in: &record)
                state.records[ExactPath(path)] = record
            }
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// A folder removed or renamed away: the vouches of every asset under it go, in proportion
    /// to how many there are.
    func dropVouches(underFolder folder: String) {
        state.withLock { state in
            state.dropVouches(underFolder: folder)
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// Lost events (`.rescan`): nothing can be vouched for any more.
    func dropAllVouches() {
        state.withLock { state in
            state.dropAllVouches()
            vouchGeneration.add(1, ordering: .releasing)
        }
    }

    /// Vouched assets (tests and `/metrics`).
    var vouchCount: Int { state.withLock { $0.vouchedAssets } }
}

extension MemoryCache.AssetRecord {
    /// Nil: not vouched for; else the slot `variant` was seen to hit, if any. Mutating only so
    /// that a caller reaching the record through a table looks at it in place.
    mutating func vouchedSlot(for variant: ThumbnailVariant) -> Int?? {
        guard vouch != nil else { return nil }
        return .some(vouch?.aliases.first { $0.variant == variant }?.slot)
    }
}

extension MemoryCache.State {
    /// The parent folder of a relative path ("" for the root).
    static func folder(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        // Cut at the byte: a String subscript would round a '/' inside a Character (after a
        // prepend mark) down to that Character's start, and name another folder.
        return String(Substring(path.utf8[..<slash]))
    }

    mutating func dropVouch(of path: String, in record: inout MemoryCache.AssetRecord) {
        guard let vouch = record.vouch else { return }
        itemBytes -= vouch.countedBytes
        vouchedAssets -= 1
        record.vouch = nil
        removeFromFolders(path)
    }

    /// Clears a vouch whose folder node the caller removes itself.
    private mutating func clearVouch(of path: String) {
        guard var record = records[ExactPath(path)], let vouch = record.vouch else { return }
        itemBytes -= vouch.countedBytes
        vouchedAssets -= 1
        record.vouch = nil
        records[ExactPath(path)] = record
    }

    mutating func addToFolders(_ path: String) {
        var folder = Self.folder(of: path)
        var child = path
        var isAsset = true
        while true {
            let existed = folders[ExactPath(folder)] != nil
            var node = folders.removeValue(forKey: ExactPath(folder)) ?? MemoryCache.FolderNode()
            if existed { itemBytes -= MemoryCache.Accounting.folderBytes(folder, node) }
            if isAsset { node.assets.insert(ExactPath(child)) } else { node.subfolders.insert(ExactPath(child)) }
            itemBytes += MemoryCache.Accounting.folderBytes(folder, node)
            folders[ExactPath(folder)] = node
            // An existing node is linked to its parent already; the root has none.
            if existed || folder.isEmpty { return }
            child = folder
            folder = Self.folder(of: folder)
            isAsset = false
        }
    }

    mutating func removeFromFolders(_ path: String) {
        var folder = Self.folder(of: path)
        var child = path
        var isAsset = true
        while var node = folders.removeValue(forKey: ExactPath(folder)) {
            itemBytes -= MemoryCache.Accounting.folderBytes(folder, node)
            if isAsset { node.assets.remove(ExactPath(child)) } else { node.subfolders.remove(ExactPath(child)) }
            guard node.isEmpty else {
                itemBytes += MemoryCache.Accounting.folderBytes(folder, node)
                folders[ExactPath(folder)] = node
                return
            }
            if folder.isEmpty { return }
            child = folder
            folder = Self.folder(of: folder)
            isAsset = false
        }
    }

    mutating func dropVouches(underFolder top: String) {
        guard folders[ExactPath(top)] != nil else { return }
        var pending = [top]
        while let folder = pending.popLast() {
            guard let node = folders.removeValue(forKey: ExactPath(folder)) else { continue }
            itemBytes -= MemoryCache.Accounting.folderBytes(folder, node)
            for path in node.assets { clearVouch(of: path.text) }
            pending.append(contentsOf: node.subfolders.map(\.text))
        }
        // Unlink the removed folder from its parent (and prune ancestors left empty).
        if !top.isEmpty { removeSubfolder(top) }
    }

    private mutating func removeSubfolder(_ folder: String) {
        var child = folder
        while true {
            let parent = Self.folder(of: child)
            guard var node = folders.removeValue(forKey: ExactPath(parent)) else { return }
            itemBytes -= MemoryCache.Accounting.folderBytes(parent, node)
            node.subfolders.remove(ExactPath(child))
            guard node.isEmpty else {
                itemBytes += MemoryCache.Accounting.folderBytes(parent, node)
                folders[ExactPath(parent)] = node
                return
            }
            if parent.isEmpty { return }
            child = parent
        }
    }

    mutating func dropAllVouches() {
        for (folder, node) in folders {
            itemBytes -= MemoryCache.Accounting.folderBytes(folder.text, node)
            for path in node.assets { clearVouch(of: path.text) }
        }
        folders = [:]
        updateTableBytes()
    }
}
