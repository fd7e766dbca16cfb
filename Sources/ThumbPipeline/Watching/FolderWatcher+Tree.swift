#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// Adding and dropping the watches of a tree.
extension FolderWatcher {
    struct WatchFailure {
        var path: String
        var error: SystemError
    }

    /// The kernel refused a watch for want of watches (`fs.inotify.max_user_watches`: ENOSPC)
    /// or of memory: the folder exists and is worth trying again later.
    static func isWatchLimit(_ error: SystemError) -> Bool { error.errno == ENOSPC || error.errno == ENOMEM }

    /// Watches `path` and every folder under it, each watched before it is listed; reports the
    /// images found when `reportFiles`. Returns the folders that could not be watched (a folder
    /// that could not be watched is not listed: its subfolders are not tried).
    @discardableResult
    func addTree(_ path: String, reportFiles: Bool) -> [WatchFailure] {
        var seen = Set<Int32>()
        return addTree(path, reportFiles: reportFiles, seen: &seen)
    }

    /// `addTree`, collecting the wds of the folders watched into `seen`. Each folder is opened
    /// from its parent's descriptor and watched by `/proc/self/fd/N`: the kernel resolves a name
    /// or a fixed path per folder, however deep (by absolute path: the whole path each time).
    @discardableResult
    func addTree(_ path: String, reportFiles: Bool, seen: inout Set<Int32>) -> [WatchFailure] {
        let walk = FolderWalk(root: root)
        defer { kernelPaths.withLock { $0 = ($0.bytes &+ walk.kernelPathBytes, $0.calls &+ walk.kernelPathCalls) } }
        var failures: [WatchFailure] = []
        var pending: [(parent: WalkFolder?, name: String, relative: String)] = [(nil, "", path)]
        while let next = pending.popLast(), !isStopping {
            let folder: WalkFolder
            do throws(SystemError) {
                folder = try walk.open(next.name, relative: next.relative, in: next.parent)
                let wd = try watch(folder, walk)
                seen.insert(wd)
                let stale = changeTable { $0.insert(wd: wd, path: next.relative) }
                if let stale { unwatch(stale) }
                if next.relative.isEmpty {
                    let identity = FolderIdentity(descriptor: folder.descriptor)
                    watchedRoot.withLock { $0 = identity }
                }
            } catch {
                // At run time a folder gone or replaced (ENOENT/ENOTDIR/ELOOP) since it was seen
                // has its own event coming; the watch limit is the caller's to note.
                failures.append(WatchFailure(path: next.relative, error: error))
                continue
            }
            guard let entries = try? walk.list(folder) else { continue }
            for entry in entries where !AssetNames.isHidden(entry.name) {
                let child = AssetNames.join(folder.relative, entry.name)
                switch entry.kind {
                case .directory:
                    if !AssetNames.isExcluded(relative: child, in: root) {
                        pending.append((walk.mayKeepFolders ? folder : nil, entry.name, child))
                    }
                case .regularFile:
                    if reportFiles && !isStopping && walk.isImageFile(entry.name, in: folder) {
                        handler(.changed(path: child))
                    }
                case .other:
                    break
                }
            }
        }
        return failures
    }

    /// Adds the watch of an open folder; a refusal by the watch limit is counted.
    private func watch(_ folder: WalkFolder, _ walk: FolderWalk) throws(SystemError) -> Int32 {
        let target: String
        var mask = Self.watchMask
        if let path = walk.procPath(of: folder) {
            target = path
            mask &= ~UInt32(IN_DONT_FOLLOW)
        } else {
            target = AssetNames.absolute(folder.relative, in: root)
            walk.countAbsolutePath(target)
        }
        do {
            return try watchAdder.add(inotifyFD, target, folder.relative, mask)
        } catch {
            if Self.isWatchLimit(error) { coverage.watchFailures.add(1, ordering: .relaxed) }
            throw SystemError(operation: "inotify_add_watch \(folder.relative.isEmpty ? "." : folder.relative)", errno: error.errno)
        }
    }

    /// inotify_rm_watch; EINVAL when the kernel dropped the watch already (it is then moot).
    func unwatch(_ wd: Int32) {
        let fd = inotifyFD
        _ = try? systemCall("inotify_rm_watch \(wd)") { inotify_rm_watch(fd, wd) }
    }

    /// Forgets and unwatches `path` and every folder under it (watched or missed).
    func dropTree(_ path: String) {
        let removed = changeTable { $0.removeTree(path) }
        for wd in removed { unwatch(wd) }
        forgetMissed(under: path)
    }

    func dropAll() {
        let removed = changeTable { table in
            defer { table = WatchTable() }
            return Array(table.paths.keys)
        }
        for wd in removed { unwatch(wd) }
        forgetMissed(under: "")
    }

    /// After lost events: watches every folder present now (a re-add of a watched folder gives
    /// its existing wd, renamed to its current path), drops the watches not seen, and starts
    /// over with the folders the watch limit leaves out (the consumer's full rescan covers
    /// what they missed so far).
    func resynchronize() {
        guard table.withLock({ $0.wds[""] }) != nil else { return }  // The root is gone (or missed).
        var seen = Set<Int32>()
        forgetMissed(under: "")
        let failures = addTree("", reportFiles: false, seen: &seen)
        // Anything the walk did not re-add still maps to an old path: drop it.
        let stale = changeTable { table -> [Int32] in
            let stale = table.paths.keys.filter { !seen.contains($0) }
            for wd in stale { table.remove(wd: wd) }
            return stale
        }
        for wd in stale { unwatch(wd) }
        noteMissed(failures, reportFiles: false)
    }
}

extension FolderIdentity {
    /// The identity of the folder open at `descriptor` (nil when it is not a folder).
    init?(descriptor: Int32) {
        var status = stat()
        guard (try? systemCall("fstat folder", { fstat(descriptor, &status) })) != nil, (status.st_mode & S_IFMT) == S_IFDIR else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}
