#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// Vouched versions: a memory hit without a syscall.
///
/// A request resolves its asset (open the root, `openat2`, `fstat`, close) to learn its version,
/// the first half of its cache key. While the folder watcher watches the asset's folder, any
/// change to the file (written and closed, renamed over, deleted, its folder moved away, events
/// lost) is reported, and the report drops what was learnt: so a version resolved while the
/// folder is watched holds until such a report, and hits on it need not look at the file again.
/// The memory cache keeps these vouches beside the entries they lead to (`MemoryCache+Vouches`):
/// only assets with entries are vouched for, which bounds the table by the memory budget.
///
/// Vouched for only what the watcher is sure to see a change of: the path asked is the file's
/// own (no symlink on the way: a change to the target is reported under the target's path), it
/// has no other hard link (a write through another name is reported in that name's folder), no
/// hidden component and an image name (the watcher ignores the rest), and it is on the root's
/// own local file system (inotify does not see changes made by other hosts of a network file
/// system, nor anything in a mount inside the root). What is left, knowingly: a change inotify
/// cannot report at all (a write through a hard link made after the vouch, from outside the
/// root; a file system changed under a bind mount) is served its old thumbnail until the entry
/// is evicted, a rescan, or the daemon restarts.
struct VouchingWatch: Sendable {
    let watcher: FolderWatcher
    /// The root's device: files elsewhere (a mount inside the root) are not vouched for.
    let rootDevice: UInt64

    /// File systems whose changes may come from elsewhere without an inotify event (statfs magic).
    static let remoteFileSystems: Set<UInt32> = [
        0x6969, // NFS
        0x517B, 0xFF53_4D42, 0xFE53_4D42, // SMB, CIFS, SMB2
        0x6573_5546, // FUSE (sshfs, s3fs, ...)
        0x0102_1997, // 9P
        0x00C3_6400, // Ceph
        0x5346_414F, // AFS
        0x7375_7245, // Coda
        0x0BD0_0BD0, // Lustre
        0x0116_1970, // GFS2
        0x7461_636F, // OCFS2
    ]

    /// The watch to vouch with, or nil when the root's file system may change unseen (logged).
    static func make(watcher: FolderWatcher, root: AssetRoot, log: PipelineLog) -> VouchingWatch? {
        let type: Int64
        var status = stat()
        do throws(SystemError) {
            type = try FileSystemType.magic(of: root.path)
            try systemCall("stat \(root.path)") { stat(root.path, &status) }
        } catch {
            log.notice("asset root \(root.path): \(error); every request looks at its file (no vouched hits)")
            return nil
        }
        if remoteFileSystems.contains(UInt32(truncatingIfNeeded: type)) {
            log.notice("asset root \(root.path) is on a network file system (type 0x\(String(UInt32(truncatingIfNeeded: type), radix: 16))), "
                       + "whose changes from other hosts inotify does not see: every request looks at its file")
            return nil
        }
        return VouchingWatch(watcher: watcher, rootDevice: UInt64(status.st_dev))
    }

    /// Whether a version just resolved for `requestPath` may be vouched for (see the type's notes).
    func mayVouch(requestPath: String, version: AssetVersion, links: Int) -> Bool {
        guard links == 1, version.device == rootDevice, requestPath == version.path else { return false }
        let components = requestPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard let name = components.last, !components.contains(where: { $0.isEmpty || $0.first == UInt8(ascii: ".") }),
              let text = String(name), AssetNames.isImageName(text) else { return false }
        return watcher.isWatching(folder: MemoryCache.State.folder(of: requestPath))
    }
}

extension AssetRoot {
    /// `resolve`, and the file's link count (a second `fstat` of the same descriptor): only asked
    /// while a watcher could vouch for the version.
    func resolveCountingLinks(_ relative: String) throws(AssetPathError) -> (absolutePath: String, version: AssetVersion, links: Int) {
        let opened = try open(relative, flags: ConfinedOpen.pathOnly)
        defer { Glibc.close(opened.descriptor) }
        var status = stat()
        let links = (try? systemCall("fstat \(relative)") { fstat(opened.descriptor, &status) }) == nil ? 0 : Int(status.st_nlink)
        return (path + "/" + opened.version.path, opened.version, links)
    }
}
