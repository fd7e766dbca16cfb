#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

extension AssetScanner {
    /// Visits the same assets as `scanReportingFailures`, one folder listed at a time, in the
    /// byte order of their relative paths: SQLite's order for TEXT, so that a reconcile can walk
    /// the tree and the index side by side without holding either whole. (A folder sorts as its
    /// name plus "/": "a.jpg" < "a/b.jpg" < "a0.jpg", as the paths do.) Memory is the folders on
    /// the current path's listings, not the tree.
    ///
    /// `failure` gets each folder that could not be listed ("" is the root) and each file that
    /// could not be stat'ed, as they are met, before any path beneath them would have been.
    /// `visit` returns false to stop the walk; the result is false when it was stopped.
    static func walkSorted(_ root: AssetRoot, failure: (AssetScan.Failure) -> Void, visit: (AssetVersion) -> Bool) -> Bool {
        struct Folder {
            var path: String
            var entries: [DirectoryEntry]
            var next = 0
        }
        func listed(_ relative: String) -> Folder? {
            let absolute = AssetNames.absolute(relative, in: root)
            do {
                let entries = try listDirectory(absolute).filter { !AssetNames.isHidden($0.name) }
                return Folder(path: relative, entries: entries.sorted { sortKey($0).utf8.lexicographicallyPrecedes(sortKey($1).utf8) })
            } catch {
                failure(.init(path: relative, error: error))
                return nil
            }
        }
        var stack: [Folder] = []
        if let top = listed("") { stack.append(top) }
        while !stack.isEmpty {
            let index = stack.count - 1
            guard stack[index].next < stack[index].entries.count else {
                stack.removeLast()
                continue
            }
            let entry = stack[index].entries[stack[index].next]
            stack[index].next += 1
            let folder = stack[index].path
            let path = AssetNames.join(folder, entry.name)
            let absolute = AssetNames.absolute(folder, in: root) + "/" + entry.name
            switch entry.kind {
            case .directory:
                if !AssetNames.isExcluded(absolutePath: absolute, in: root), let inner = listed(path) { stack.append(inner) }
            case .regularFile:
                guard AssetNames.isImageFile(entry.name, absolutePath: absolute) else { continue }
                var status = stat()
                do {
                    try systemCall("lstat \(path)") { lstat(absolute, &status) }
                } catch {
                    // Gone since the listing: not an asset any more.
                    if error.errno != ENOENT { failure(.init(path: path, error: error)) }
                    continue
                }
                guard (status.st_mode & S_IFMT) == S_IFREG else { continue }
                if !visit(version(of: path, status)) { return false }
            case .other:
                continue
            }
        }
        return true
    }

    /// A folder sorts as its name followed by "/", where its paths begin.
    private static func sortKey(_ entry: DirectoryEntry) -> String {
        entry.kind == .directory ? entry.name + "/" : entry.name
    }
}
