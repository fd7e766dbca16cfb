#if canImport(Glibc)
package import Glibc
#endif

/// Whole-file writes that never leave a partial file under the final name.
package enum AtomicFile {
    /// Creates `path` (it must not exist), writes `bytes`, optionally sets its modification
    /// time, and fsyncs. On failure the file is removed.
    package static func writeNew(_ path: String, _ bytes: [UInt8], modificationTime: timespec? = nil) throws(SystemError) {
        try write(path, bytes, modificationTime: modificationTime, locked: false, then: nil)
    }

    /// Replaces (or creates) `path`: a temporary name in the same folder, fsync, rename.
    /// Readers see the old file or the whole new one, never a part.
    /// The temporary file is `flock`ed from its creation until it is renamed: a later run that
    /// sweeps the temporary files of dead writers (`StaleTemporaryFiles` in ThumbBatch) must not
    /// take a live writer's for a dead one's, and on another host or in another PID namespace
    /// the PID in the name tells it nothing.
    package static func replace(_ path: String, with bytes: [UInt8], modificationTime: timespec? = nil) throws(SystemError) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(folder.isEmpty ? "/" : folder)/.\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        try write(temporary, bytes, modificationTime: modificationTime, locked: true) { () throws(SystemError) in
            try systemCall("rename \(temporary) to \(path)") { rename(temporary, path) }
        }
    }

    /// `then` runs once the bytes are durable, before the descriptor (and its lock) is closed;
    /// after it succeeded, `path` is no longer this file's name and a failure removes nothing.
    private static func write(_ path: String, _ bytes: [UInt8], modificationTime: timespec?, locked: Bool,
                              then finish: (() throws(SystemError) -> Void)?) throws(SystemError) {
        let fd = try systemCall("create \(path)") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        var finished = false
        do throws(SystemError) {
            // Best effort: the lock only tells a later sweep that a writer is alive; a file
            // system without flock (ENOLCK, EOPNOTSUPP, EINVAL) must not fail the write itself.
            if locked {
                do throws(SystemError) {
                    _ = try systemCall("lock \(path)") { flock(fd, LOCK_EX) }
                } catch where [ENOLCK, EOPNOTSUPP, EINVAL].contains(error.errno) {}
            }
            var offset = 0
            while offset < bytes.count {
                offset += try bytes.withUnsafeBytes { buffer in
                    Result { () throws(SystemError) in
                        try systemCall("write \(path)") { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
                    }
                }.get()
            }
            if let modificationTime {
                var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2), modificationTime] // UTIME_OMIT: access time unchanged
                try systemCall("set the time of \(path)") { futimens(fd, &times) }
            }
            try systemCall("fsync \(path)") { fsync(fd) }
            if let finish {
                try finish()
                finished = true
                // The bytes were fsynced before the rename: a failing close loses nothing.
                _ = close(fd)
            } else {
                try systemCall("close \(path)") { close(fd) }
            }
        } catch {
            if !finished {
                _ = close(fd)
                _ = try? systemCall("unlink \(path)") { unlink(path) }
            }
            throw error
        }
    }
}
