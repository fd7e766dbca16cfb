#if canImport(Glibc)
import Glibc
#endif

/// Why a small file someone else wrote (a spool job, a counter) could not be had.
package enum SmallFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A symbolic link, a FIFO, a device, a folder: only regular files are read.
    case notRegular(what: String)
    /// More bytes than the limit (found by reading one past it, not by trusting `st_size`).
    case tooLarge(maxBytes: Int)
    case unreadable(SystemError)

    package var description: String {
        switch self {
        case .notRegular(let what): "not a regular file (\(what)); only regular files are read"
        case .tooLarge(let maxBytes): "over \(maxBytes) bytes"
        case .unreadable(let error): error.description
        }
    }
}

/// Reads of files whose writer we do not trust. Opened `O_NOFOLLOW | O_NONBLOCK` (a symlink is
/// refused by the kernel, a FIFO cannot block us), checked regular by `fstat` of that very
/// descriptor, and read at most `maxBytes + 1` bytes: a sparse 1 GiB file costs one buffer of the
/// limit, never its claimed size.
package enum SmallFile {
    package static func read(_ path: String, maxBytes: Int) throws(SmallFileError) -> [UInt8] {
        let descriptor: Int32
        do throws(SystemError) {
            descriptor = try systemCall("open \(path)") { open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
        } catch {
            if error.errno == ELOOP { throw .notRegular(what: "a symbolic link") }
            throw .unreadable(error)
        }
        defer { _ = close(descriptor) }
        var status = stat()
        do throws(SystemError) {
            try systemCall("fstat \(path)") { fstat(descriptor, &status) }
        } catch {
            throw .unreadable(error)
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular(what: kindName(status.st_mode)) }
        let limit = max(0, maxBytes)
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(SystemError) in
                    try systemCall("read \(path)") { Glibc.read(descriptor, buffer.baseAddress! + filled, buffer.count - filled) }
                }
            }
            switch got {
            case .failure(let error): throw .unreadable(error)
            case .success(0): return try finished(bytes, filled: filled, limit: limit)
            case .success(let count): filled += count
            }
        }
        return try finished(bytes, filled: filled, limit: limit)
    }

    private static func finished(_ buffer: [UInt8], filled: Int, limit: Int) throws(SmallFileError) -> [UInt8] {
        var bytes = buffer
        guard filled <= limit else { throw .tooLarge(maxBytes: limit) }
        bytes.removeSubrange(filled...)
        return bytes
    }

    private static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR, S_IFBLK: "a device"
        default: "not a plain file"
        }
    }
}
