/// The live folder watches: wd → relative path and back. Holds only watched folders: entries
/// leave on `IN_IGNORED`, on the parent's delete/move-away event, or on a conflict.
struct WatchTable {
    var paths: [Int32: String] = [:]
    var wds: [String: Int32] = [:]

    /// Records `wd` at `path`. Returns a different wd that was recorded at `path` (a folder
    /// replaced before its removal was seen), now forgotten, for the caller to unwatch.
    mutating func insert(wd: Int32, path: String) -> Int32? {
        if let old = paths[wd], old != path { wds[old] = nil }
        paths[wd] = path
        var stale: Int32?
        if let other = wds[path], other != wd {
            paths[other] = nil
            stale = other
        }
        wds[path] = wd
        return stale
    }

    mutating func remove(wd: Int32) {
        guard let path = paths.removeValue(forKey: wd) else { return }
        if wds[path] == wd { wds[path] = nil }
    }

    /// Forgets `path` and its subfolders; returns their wds.
    mutating func removeTree(_ path: String) -> [Int32] {
        let prefix = path + "/"
        let removed = wds.filter { $0.key == path || $0.key.hasPrefix(prefix) }
        for (key, wd) in removed {
            wds[key] = nil
            paths[wd] = nil
        }
        return Array(removed.values)
    }
}
