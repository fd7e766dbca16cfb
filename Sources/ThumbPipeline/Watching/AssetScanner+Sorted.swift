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
            /// Open while the folders on the stack stay within `FolderWalk.maxOpenFolders`;
            /// otherwise dropped when a subfolder is entered and opened again from the root after.
            var opened: WalkFolder?
            var entries: [DirectoryEntry]
            var next = 0
        }
        // Descriptor-relative, as `scan`: a file costs the same at any depth.
        let walk = FolderWalk(root: root)
        func listed(_ name: String, _ relative: String, in parent: WalkFolder?) -> Folder? {
            do throws(SystemError) {
                let opened = try walk.open(name, relative: relative, in: parent)
                let entries = try walk.list(opened).filter { !AssetNames.isHidden($0.name) }
                return Folder(path: relative, opened: opened,
                              entries: entries.sorted { sortKey($0).utf8.lexicographicallyPrecedes(sortKey($1).utf8) })
            } catch {
                failure(.init(path: relative, error: error))
                return nil
            }
        }
        var stack: [Folder] = []
        if let top = listed("", "", in: nil) { stack.append(top) }
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
            if stack[index].opened == nil {
                do throws(SystemError) {
                    stack[index].opened = try walk.open(folder)
                } catch {
                    // Gone since it was listed: nothing more of it to visit.
                    stack[index].next = stack[index].entries.count
                    continue
                }
            }
            guard let current = stack[index].opened else { continue }
            switch entry.kind {
            case .directory:
                if !AssetNames.isExcluded(relative: path, in: root) {
                    if !walk.mayKeepFolders { stack[index].opened = nil }
                    if let inner = listed(entry.name, path, in: stack[index].opened ?? nil) { stack.append(inner) }
                }
            case .regularFile:
                guard walk.isImageFile(entry.name, in: current) else { continue }
                let status: stat
                do throws(SystemError) {
                    status = try walk.status(of: entry.name, in: current)
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
