import ThumbSystem

/// The live folder watches: wd → relative path and back. Holds only watched folders: entries
/// leave on `IN_IGNORED`, on the parent's delete/move-away event, or on a conflict.
///
/// `children` indexes the paths by parent (every ancestor of a watched path has its node, so
/// the chain is whole even where a folder in between has no watch), which makes `removeTree`
/// cost the subtree's size instead of a filter over every watch.
///
/// Paths are keys by their bytes (`ExactPath`): `café` spelled NFC and NFD are two folders, and
/// as `String` keys the second's watch took the first's place (and its removal the other's).
struct WatchTable {
    var paths: [Int32: String] = [:]
    /// Exactly the folders (relative; "" is the root) that have a live watch now.
    var wds: [ExactPath: Int32] = [:]
    /// Path → the paths one level below it that are watched or lead to a watched one.
    private(set) var children: [ExactPath: Set<ExactPath>] = [:]

    /// Records `wd` at `path`. Returns a different wd that was recorded at `path` (a folder
    /// replaced before its removal was seen), now forgotten, for the caller to unwatch.
    mutating func insert(wd: Int32, path: String) -> Int32? {
        let key = ExactPath(path)
        if let old = paths[wd], ExactPath(old) != key {
            wds[ExactPath(old)] = nil
            prune(ExactPath(old))
        }
        paths[wd] = path
        var stale: Int32?
        if let other = wds[key], other != wd {
            paths[other] = nil
            stale = other
        }
        wds[key] = wd
        link(key)
        return stale
    }

    mutating func remove(wd: Int32) {
        guard let removed = paths.removeValue(forKey: wd) else { return }
        let path = ExactPath(removed)
        if wds[path] == wd {
            wds[path] = nil
            prune(path)
        }
    }

    /// Forgets `path` and its subfolders; returns their wds.
    mutating func removeTree(_ folder: String) -> [Int32] {
        let path = ExactPath(folder)
        var removed: [Int32] = []
        var pending = [path]
        while let node = pending.popLast() {
            if let wd = wds.removeValue(forKey: node) {
                paths[wd] = nil
                removed.append(wd)
            }
            if let below = children.removeValue(forKey: node) { pending += below }
        }
        unlinkFromParent(path)
        return removed
    }

    /// Adds `path` under its parent, and the parent under its own, until a node that is linked
    /// already (its ancestors then are too).
    private mutating func link(_ path: ExactPath) {
        var node = path
        while !node.text.isEmpty {
            let parent = ExactPath(AssetNames.parent(of: node.text))
            guard children[parent, default: []].insert(node).inserted else { return }
            node = parent
        }
    }

    /// Removes `path`'s node when nothing is watched at or below it, then its parent's likewise.
    private mutating func prune(_ path: ExactPath) {
        var node = path
        while wds[node] == nil, children[node]?.isEmpty ?? true {
            children[node] = nil
            guard !node.text.isEmpty else { return }
            let parent = ExactPath(AssetNames.parent(of: node.text))
            unlink(node, from: parent)
            node = parent
        }
    }

    /// Takes `path` (already emptied) out of its parent's node, and prunes the parent.
    private mutating func unlinkFromParent(_ path: ExactPath) {
        guard !path.text.isEmpty else { return }
        let parent = ExactPath(AssetNames.parent(of: path.text))
        unlink(path, from: parent)
        prune(parent)
    }

    private mutating func unlink(_ path: ExactPath, from parent: ExactPath) {
        // In place: a copy of a big folder's set per unlink would make removals quadratic.
        children[parent]?.remove(path)
        if children[parent]?.isEmpty == true { children[parent] = nil }
    }
}
