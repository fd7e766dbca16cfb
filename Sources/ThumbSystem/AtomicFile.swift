#if canImport(Glibc)
package import Glibc
#endif

/// Whole-file writes that never leave a partial file under the final name.
package enum AtomicFile {
    /// Creates `path` (it must not exist), writes `bytes`, optionally sets its modification
    /// time, and fsyncs. On failure the file is removed.
    package static func writeNew(_ path: String, _ bytes: [UInt8], modificationTime: timespec? = nil) throws(SystemError) {
        let fd = try systemCall("create \(path)") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        do throws(SystemError) {
            var offset = 0
            while offset < bytes.count {
                offset += try bytes.withUnsafeBytes { buffer in
                    Result { () throws(SystemError) in
                        try systemCall("write \(path)") { write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
                    }
                }.get()
            }
            if let modificationTime {
                var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), modificationTime] // UTIME_OMIT: access time unchanged
                try systemCall("set the time of \(path)") { futimens(fd, &times) }
            }
            try systemCall("fsync \(path)") { fsync(fd) }
            try systemCall("close \(path)") { close(fd) }
        } catch {
            _ = close(fd)
            _ = try? systemCall("unlink \(path)") { unlink(path) }
            throw error
        }
    }

    /// Replaces (or creates) `path`: a temporary name in the same folder, fsync, rename.
    /// Readers see the old file or the whole new one, never a part.
    package static func replace(_ path: String, with bytes: [UInt8], modificationTime: timespec? = nil) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(folder.isEmpty ? "/" : folder)/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        try writeNew(temporary, bytes, modificationTime: modificationTime)
        do throws(SystemError) {
            try systemCall("rename \(temporary) to \(path)") { rename(temporary, path) }
        } catch {
            _ = try? systemCall("unlink \(temporary)") { unlink(temporary) }
            throw error
        }
    }
}
