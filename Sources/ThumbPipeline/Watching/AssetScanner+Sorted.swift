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
            /// By entry name: the version of each asset file (stat'ed while listing).
            var versions: [String: AssetVersion]
            var next = 0
        }
        func listed(_ relative: String) -> Folder? {
            let absolute = AssetNames.absolute(relative, in: root)
            do {
                let entries = try listDirectory(absolute).filter { !AssetNames.isHidden($0.name) }
                let versions = statAssets(entries, in: relative, absolute: absolute, failure: failure)
                return Folder(path: relative, entries: entries.sorted { sortKey($0).utf8.lexicographicallyPrecedes(sortKey($1).utf8) },
                              versions: versions)
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
                if let version = stack[index].versions[entry.name], !visit(version) { return false }
            case .other:
                continue
            }
        }
        return true
    }

    /// The asset files among a folder's entries, stat'ed relative to the folder's descriptor
    /// (one path component each, not the whole path again), without following links.
    private static func statAssets(_ entries: [DirectoryEntry], in relative: String, absolute: String,
                                   failure: (AssetScan.Failure) -> Void) -> [String: AssetVersion] {
        let files = entries.filter { $0.kind == .regularFile && AssetNames.isImageFile($0.name, absolutePath: absolute + "/" + $0.name) }
        guard !files.isEmpty else { return [:] }
        let folder: Int32
        do throws(SystemError) {
            folder = try systemCall("open directory \(absolute)") { open(absolute, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            failure(.init(path: relative, error: error))
            return [:]
        }
        defer { close(folder) }
        var versions: [String: AssetVersion] = [:]
        versions.reserveCapacity(files.count)
        for entry in files {
            let path = AssetNames.join(relative, entry.name)
            var status = stat()
            do throws(SystemError) {
                try systemCall("lstat \(path)") { fstatat(folder, entry.name, &status, AT_SYMLINK_NOFOLLOW) }
            } catch {
                // Gone since the listing: not an asset any more.
                if error.errno != ENOENT { failure(.init(path: path, error: error)) }
                continue
            }
            guard (status.st_mode & S_IFMT) == S_IFREG else { continue }
            versions[entry.name] = version(of: path, status)
        }
        return versions
    }

    /// A folder sorts as its name followed by "/", where its paths begin.
    private static func sortKey(_ entry: DirectoryEntry) -> String {
        entry.kind == .directory ? entry.name + "/" : entry.name
    }
}
