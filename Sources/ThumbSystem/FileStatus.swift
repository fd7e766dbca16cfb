#if canImport(Glibc)
package import Glibc
#endif

/// Identity of one version of a file, from `fstat`: what a cache key and a negative entry name,
/// and what tells a file rewritten while it was read.
package struct FileStatus: Sendable, Hashable {
    /// Bytes.
    package var size: Int
    /// Nanoseconds since the epoch.
    package var modifiedNanoseconds: Int64
    package var inode: UInt64
    package var device: UInt64

    package init(size: Int, modifiedNanoseconds: Int64, inode: UInt64, device: UInt64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
        self.device = device
    }

    /// The identity `fstat` gives (st_size and st_mtim are 64-bit on every Linux Swift runs on).
    package init(_ status: stat) {
        self.init(size: Int(status.st_size),
                  modifiedNanoseconds: Int64(status.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(status.st_mtim.tv_nsec),
                  inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
    }

    /// `fstat` of an open descriptor.
    package static func of(descriptor: Int32, label: @autoclosure () -> String) throws(SystemError) -> (FileStatus, mode: mode_t) {
        var status = stat()
        try systemCall("fstat \(label())") { fstat(descriptor, &status) }
        return (FileStatus(status), status.st_mode)
    }
}

/// Why an open file's bytes could not be had.
package enum FileReadError: Error, Equatable, Sendable {
    /// Over the byte limit, from its size (nothing read).
    case tooLarge(reason: String)
    /// The file was written while being read (shorter or longer than `fstat` said, or its size or
    /// mtime moved): a transient conflict, worth one more try.
    case changed(reason: String)
    case unreadable(reason: String)
}

package enum WholeFile {
    /// Reads exactly `status.size` bytes of `descriptor` into `buffer` (at least that large), then
    /// proves the file did not change meanwhile: no byte beyond, same size and mtime after.
    package static func read(_ descriptor: Int32, status: FileStatus, label: String,
                             into buffer: UnsafeMutableRawBufferPointer) throws(FileReadError) {
        let size = status.size
        var filled = 0
        while filled < size {
            let got: Int
            do throws(SystemError) {
                got = try systemCall("read \(label)") { Glibc.read(descriptor, buffer.baseAddress! + filled, size - filled) }
            } catch {
                throw .unreadable(reason: error.description)
            }
            guard got > 0 else { throw .changed(reason: "\(label) shrank while being read (\(filled) of \(size) bytes)") }
            filled += got
        }
        // Grown, or rewritten in place, since the open: the bytes may mix two versions.
        var extra: UInt8 = 0
        if let more = try? systemCall("read \(label)", { Glibc.read(descriptor, &extra, 1) }), more > 0 {
            throw .changed(reason: "\(label) grew while being read")
        }
        let after: FileStatus
        do throws(SystemError) {
            after = try FileStatus.of(descriptor: descriptor, label: label).0
        } catch {
            throw .unreadable(reason: error.description)
        }
        guard after.size == size, after.modifiedNanoseconds == status.modifiedNanoseconds else {
            throw .changed(reason: "\(label) was modified while being read")
        }
    }
}
