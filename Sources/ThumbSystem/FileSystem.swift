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

    /// The names in a folder (not `.` and `..`), unsorted. A name that is not UTF-8 is left out:
    /// no path made from a repaired name could reach that file.
    package static func names(in folder: String) throws(SystemError) -> [String] {
        guard let directory = opendir(folder) else {
            throw SystemError(operation: "opendir \(folder)", errno: errno)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw SystemError(operation: "readdir \(folder)", errno: errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(validatingCString: bytes.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if let name, name != ".", name != ".." { names.append(name) }
        }
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
