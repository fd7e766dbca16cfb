#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// The disk cache's file operations, all through `systemCall` (EINTR retried, errno kept).
enum CacheFiles {
    /// `mkdir -p`: creates `path` and its missing parents (mode 0755).
    static func createDirectories(_ path: String) throws(SystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            try createDirectory(prefix)
        }
    }

    /// `mkdir`, where an existing directory is fine.
    static func createDirectory(_ path: String) throws(SystemError) {
        do {
            try systemCall("mkdir \(path)") { mkdir(path, 0o755) }
        } catch where error.errno == EEXIST {
            var status = stat()
            guard (try? systemCall("stat \(path)", { stat(path, &status) })) != nil, (status.st_mode & S_IFMT) == S_IFDIR else {
                throw SystemError(operation: "mkdir \(path)", errno: ENOTDIR)
            }
        }
    }

    static func realPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = realpath(path, nil) else { throw SystemError(operation: "realpath \(path)", errno: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Writes `bytes` to a new file at `path` (O_CREAT|O_EXCL, mode 0644) and fsyncs it. On any
    /// failure the file is removed again.
    static func writeNewFile(_ path: String, _ bytes: [UInt8]) throws(SystemError) {
        try AtomicFile.writeNew(path, bytes)
    }

    /// Reads the whole file behind `fd` (which stays open); nil when it is not exactly
    /// `expectedSize` bytes or cannot be read.
    static func readAll(_ fd: Int32, expectedSize: Int) -> [UInt8]? {
        var status = stat()
        guard (try? systemCall("fstat", { fstat(fd, &status) })) != nil, Int(status.st_size) == expectedSize else { return nil }
        var failed = false
        let bytes = [UInt8](unsafeUninitializedCapacity: expectedSize) { buffer, count in
            var offset = 0
            while offset < expectedSize {
                let result: Int
                do {
                    result = try systemCall("read") { read(fd, buffer.baseAddress! + offset, expectedSize - offset) }
                } catch {
                    failed = true
                    break
                }
                if result == 0 { failed = true; break }  // Shorter than it said.
                offset += result
            }
            count = failed ? 0 : expectedSize
        }
        return failed ? nil : bytes
    }

    /// The size of the regular file at `path` (not following symlinks), or nil.
    static func regularFileSize(_ path: String) -> Int? {
        var status = stat()
        guard (try? systemCall("lstat \(path)", { lstat(path, &status) })) != nil, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return (try? systemCall("lstat \(path)", { lstat(path, &status) })) != nil && (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// The names in a directory (without "." and ".."); names that are not valid UTF-8 are
    /// returned lossily decoded, so removing them may fail (and is then left alone).
    static func names(in path: String) throws(SystemError) -> [String] {
        guard let stream = opendir(path) else { throw SystemError(operation: "opendir \(path)", errno: errno) }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno == 0 { break }
                if errno == EINTR { continue }
                throw SystemError(operation: "readdir \(path)", errno: errno)
            }
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes a file; a missing file is not an error.
    static func remove(_ path: String) {
        _ = try? systemCall("unlink \(path)") { unlink(path) }
    }
}

extension CacheFiles {
    /// A system failure as the cache reports it: the operation and strerror.
    static func cacheError(_ error: SystemError) -> CacheError {
        CacheError(operation: error.operation, reason: String(cString: strerror(error.errno)),
                   kind: error.errno == ENOSPC || error.errno == EDQUOT ? .diskFull : .failed)
    }

    /// An index failure as the cache reports it: the operation and sqlite's message.
    static func cacheError(_ operation: String, _ error: SQLiteError) -> CacheError {
        CacheError(operation: operation, reason: "\(error.message) (sqlite \(error.code))", kind: error.isDiskFull ? .diskFull : .failed)
    }
}
