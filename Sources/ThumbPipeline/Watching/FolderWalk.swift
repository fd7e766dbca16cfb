#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// A folder open during a walk of the asset root (`O_RDONLY | O_DIRECTORY | O_NOFOLLOW`): its
/// entries are looked at and its subfolders opened relative to it, so the kernel resolves one
/// name per call however deep the folder is. Closed when the last walk step that needs it is
/// done (the walk's pending subfolders hold their parent).
final class WalkFolder {
    let descriptor: Int32
    /// Relative to the root; "" is the root.
    let relative: String
    private let walk: FolderWalk

    fileprivate init(descriptor: Int32, relative: String, walk: FolderWalk) {
        self.descriptor = descriptor
        self.relative = relative
        self.walk = walk
        walk.openFolders += 1
        walk.peakOpenFolders = max(walk.peakOpenFolders, walk.openFolders)
    }

    deinit {
        close(descriptor)
        walk.openFolders -= 1
    }
}

/// One walk of (part of) the asset root, on one thread: opens folders descriptor-relative and
/// counts the path bytes it hands the kernel (by absolute paths that grew with the depth of
/// every file — start-up ∝ files × depth; now a name, or a fixed-size `/proc/self/fd/N`).
///
/// At most `maxOpenFolders` folders stay open for their pending subfolders; past that a
/// subfolder is opened from the root by its whole path (a tree both deep and bushy costs more
/// then, but never more descriptors).
final class FolderWalk {
    static let maxOpenFolders = 64

    let root: AssetRoot
    fileprivate(set) var openFolders = 0
    fileprivate(set) var peakOpenFolders = 0
    /// Bytes of the paths given to path-resolving system calls, and how many calls.
    private(set) var kernelPathBytes = 0
    private(set) var kernelPathCalls = 0

    init(root: AssetRoot) {
        self.root = root
    }

    /// Whether a folder may stay open for its subfolders.
    var mayKeepFolders: Bool { openFolders < Self.maxOpenFolders }

    private func counted(_ path: String) {
        kernelPathBytes &+= path.utf8.count
        kernelPathCalls &+= 1
    }

    private static let folderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC

    /// Opens the folder at `relative` by its absolute path: where a walk starts.
    func open(_ relative: String) throws(SystemError) -> WalkFolder {
        let absolute = AssetNames.absolute(relative, in: root)
        counted(absolute)
        let descriptor = try systemCall("open directory \(absolute)") { Glibc.open(absolute, Self.folderFlags) }
        return WalkFolder(descriptor: descriptor, relative: relative, walk: self)
    }

    /// Opens the subfolder `name` of `parent` (a symlink in its place fails: ELOOP or ENOTDIR),
    /// or, with no parent kept, by its path from the root.
    func open(_ name: String, relative: String, in parent: WalkFolder?) throws(SystemError) -> WalkFolder {
        guard let parent else { return try open(relative) }
        counted(name)
        let descriptor = try systemCall("open directory \(relative)") { openat(parent.descriptor, name, Self.folderFlags) }
        return WalkFolder(descriptor: descriptor, relative: relative, walk: self)
    }

    /// The folder's entries, without following symlinks; names that are not valid UTF-8 are
    /// skipped (they cannot become a path string that resolves back to the same file).
    func list(_ folder: WalkFolder) throws(SystemError) -> [DirectoryEntry] {
        // A descriptor of its own for the stream: `closedir` closes it, the folder's stays.
        counted(".")
        let streamDescriptor = try systemCall("open directory \(folder.relative)") { openat(folder.descriptor, ".", Self.folderFlags) }
        return try listDirectory(descriptor: streamDescriptor, label: folder.relative)
    }

    /// `fstatat` of `name` in `folder`, not following a symlink.
    func status(of name: String, in folder: WalkFolder) throws(SystemError) -> stat {
        counted(name)
        var status = stat()
        try systemCall("lstat \(AssetNames.join(folder.relative, name))") { fstatat(folder.descriptor, name, &status, AT_SYMLINK_NOFOLLOW) }
        return status
    }

    /// `AssetNames.isImageFile` for a file of `folder`: by its name, or its first bytes.
    func isImageFile(_ name: String, in folder: WalkFolder) -> Bool {
        guard AssetNames.isImageName(name) else { return false }
        guard !name.contains(".") else { return true }
        counted(name)
        guard let descriptor = try? systemCall("open \(name)", {
            openat(folder.descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        }) else { return false }
        defer { close(descriptor) }
        return AssetNames.sniffsAsImage(descriptor: descriptor)
    }

    /// A path naming `folder` that the kernel resolves in a fixed number of steps, for calls
    /// that take only a path (inotify_add_watch): `/proc/self/fd/N`, a link to the open folder
    /// itself (follow it: it is the folder, not a name that could be swapped). Nil without
    /// /proc; the caller then uses the absolute path.
    func procPath(of folder: WalkFolder) -> String? {
        guard Self.hasProcFileDescriptors else { return nil }
        let path = "/proc/self/fd/\(folder.descriptor)"
        counted(path)
        return path
    }

    func countAbsolutePath(_ path: String) { counted(path) }

    static let hasProcFileDescriptors: Bool = {
        var status = stat()
        return (try? systemCall("stat /proc/self/fd") { stat("/proc/self/fd", &status) }) != nil && (status.st_mode & S_IFMT) == S_IFDIR
    }()
}

