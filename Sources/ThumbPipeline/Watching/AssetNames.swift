#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif
import ThumbImaging

/// Which names under the asset root are assets, shared by the scanner and the watcher so that
/// the start-up reconciliation and the live events agree.
enum AssetNames {
    /// Extensions of source images, lowercase, without the dot. Compared case-insensitively.
    /// The name only chooses what is watched: the decoder goes by the content.
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "webp", "gif", "heic", "heif", "avif"]

    /// A hidden name (`.name.tmp`, `.git`, `.Trash-1000`): temp files being written, tool folders.
    /// Neither hidden files nor hidden folders are assets.
    static func isHidden<S: StringProtocol>(_ name: S) -> Bool { name.utf8.first == UInt8(ascii: ".") }

    /// A visible file name with an image extension (`a.JPG`, `b.jpeg`, `c.heic`), or with no
    /// extension at all (exports and content-addressed stores name files `IMG_0001` or by hash).
    static func isImageName<S: StringProtocol>(_ name: S) -> Bool {
        guard !isHidden(name) else { return false }
        guard let dot = name.lastIndex(of: ".") else { return true }
        let ext = name[name.index(after: dot)...]
        guard !ext.isEmpty, ext.utf8.count <= 4 else { return false }
        return imageExtensions.contains(String(ext).lowercased())
    }

    /// Whether a visible regular file is an asset: by its extension, or, for a name without
    /// one, by its first bytes (a README or LICENSE beside the photos is no asset, and must not
    /// become a failed render). Removals go by the name alone: a file that is gone cannot be read.
    static func isImageFile<S: StringProtocol>(_ name: S, absolutePath: String) -> Bool {
        guard isImageName(name) else { return false }
        guard !name.contains(".") else { return true }
        return sniffsAsImage(absolutePath)
    }

    /// Opens without following a link and without blocking (a FIFO answers at once), reads the
    /// first bytes and asks the decoders' sniffing.
    static func sniffsAsImage(_ absolutePath: String) -> Bool {
        guard let descriptor = try? systemCall("open \(absolutePath)", {
            open(absolutePath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        }) else { return false }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = (try? bytes.withUnsafeMutableBytes { buffer in
            try systemCall("read \(absolutePath)") { read(descriptor, buffer.baseAddress, buffer.count) }
        }) ?? 0
        return bytes.withUnsafeBytes { SourceFormat.sniff(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) } != nil
    }

    /// `relative` joined under the root's absolute path ("" is the root itself).
    static func absolute(_ relative: String, in root: AssetRoot) -> String {
        relative.isEmpty ? root.path : root.path + "/" + relative
    }

    /// `name` inside the relative folder `folder` ("" is the root).
    static func join(_ folder: String, _ name: String) -> String {
        folder.isEmpty ? name : folder + "/" + name
    }

    /// Whether the absolute path is one of the root's excluded folders or inside one.
    static func isExcluded(absolutePath: String, in root: AssetRoot) -> Bool {
        root.excluded.contains { absolutePath == $0 || absolutePath.hasPrefix($0 + "/") }
    }
}

/// One entry of a directory, read without following symlinks.
struct DirectoryEntry {
    enum Kind { case directory, regularFile, other }
    var name: String
    var kind: Kind
}

/// Lists a directory with `open(O_NOFOLLOW|O_DIRECTORY)` + `readdir`: a symlink in place of the
/// directory fails with ELOOP/ENOTDIR, and entry kinds come from `d_type` (or `fstatat` without
/// following links when the filesystem does not fill it in). Names that are not valid UTF-8 are
/// skipped: they cannot be turned into a path string that resolves back to the same file.
func listDirectory(_ absolutePath: String) throws(SystemError) -> [DirectoryEntry] {
    let fd = try systemCall("open directory \(absolutePath)") {
        open(absolutePath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    }
    guard let stream = fdopendir(fd) else {
        let code = errno
        close(fd)
        throw SystemError(operation: "fdopendir \(absolutePath)", errno: code)
    }
    defer { closedir(stream) }
    var entries: [DirectoryEntry] = []
    while true {
        errno = 0
        guard let entry = readdir(stream) else {
            let code = errno
            if code == 0 { break }
            if code == EINTR { continue }
            throw SystemError(operation: "readdir \(absolutePath)", errno: code)
        }
        let decoded: String? = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(validating: bytes, as: UTF8.self)
        }
        guard let name = decoded, name != ".", name != ".." else { continue }
        var kind: DirectoryEntry.Kind
        switch Int32(entry.pointee.d_type) {
        case Int32(DT_DIR): kind = .directory
        case Int32(DT_REG): kind = .regularFile
        case Int32(DT_UNKNOWN):
            var status = stat()
            let folder = dirfd(stream)
            if (try? systemCall("fstatat \(name)", { fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) })) == nil { continue }
            switch status.st_mode & S_IFMT {
            case S_IFDIR: kind = .directory
            case S_IFREG: kind = .regularFile
            default: kind = .other
            }
        default: kind = .other
        }
        entries.append(DirectoryEntry(name: name, kind: kind))
    }
    return entries
}
