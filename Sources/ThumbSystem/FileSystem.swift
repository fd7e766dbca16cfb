#if canImport(Glibc)
package import Glibc
#endif

/// The path operations the batch side makes (the spool's renames, its counters and reasons, the
/// output tree), each one call through `systemCall`: retried on EINTR, a failure named.
package enum FileSystem {
    /// `rename(2)`: atomic within a file system; a claim is won by exactly one renamer.
    package static func rename(_ from: String, to: String) throws(SystemError) {
        try systemCall("rename \(from) to \(to)") { Glibc.rename(from, to) }
    }

    /// `unlink(2)`; a file already gone is no failure.
    package static func remove(_ path: String) throws(SystemError) {
        do throws(SystemError) {
            try systemCall("unlink \(path)") { unlink(path) }
        } catch where error.errno == ENOENT {
        }
    }

    /// `mkdir -p`: every missing folder of `path`, mode 0755 (less the umask).
    package static func createFolders(_ path: String) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            do throws(SystemError) {
                try systemCall("mkdir \(prefix)") { mkdir(prefix, 0o755) }
            } catch where error.errno == EEXIST {
                var status = stat()
                guard lstat(prefix, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                    throw SystemError(operation: "mkdir \(prefix): not a folder", errno: ENOTDIR)
                }
            }
        }
    }

    /// The names in a folder (not `.` and `..`, nor any that is not UTF-8), unsorted.
    package static func names(in folder: String) throws(SystemError) -> [String] {
        let descriptor = try systemCall("open \(folder)") { open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        return try listDirectory(descriptor: descriptor, label: folder).map(\.name)
    }

    /// The modification time of what `path` names (following links), or nil when it cannot be read.
    package static func modificationTime(_ path: String) -> timespec? {
        var status = stat()
        return (try? systemCall("stat \(path)") { stat(path, &status) }) != nil ? status.st_mtim : nil
    }

    /// Whether process `pid` still runs (a signal 0 reaches it, or would if we were allowed).
    package static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }
}

/// One entry of a directory, read without following symlinks.
package struct DirectoryEntry: Sendable {
    package enum Kind: Sendable { case directory, regularFile, other }
    package var name: String
    package var kind: Kind
}

/// Lists the directory open at `descriptor` (which it takes over and closes) with `fdopendir` +
/// `readdir`: entry kinds come from `d_type`, or `fstatat` without following links when the
/// filesystem does not fill it in. A name that is not UTF-8 is left out: no path made from a
/// repaired name could reach that file.
package func listDirectory(descriptor fd: Int32, label: String) throws(SystemError) -> [DirectoryEntry] {
    guard let stream = fdopendir(fd) else {
        let code = errno
        close(fd)
        throw SystemError(operation: "fdopendir \(label)", errno: code)
    }
    defer { closedir(stream) }
    var entries: [DirectoryEntry] = []
    while true {
        errno = 0
        guard let entry = readdir(stream) else {
            let code = errno
            if code == 0 { break }
            if code == EINTR { continue }
            throw SystemError(operation: "readdir \(label)", errno: code)
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
