#if canImport(Glibc)
import Glibc
#endif

/// Why a source file could not be read (as opposed to decoded).
public struct SourceFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case notFound, notRegularFile, unreadable, tooLarge }
    public var kind: Kind
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

extension SourceBytes {
    /// Reads a regular file whole, refusing it from its size (before reading) when it is over
    /// `maxBytes`.
    public static func read(path: String, maxBytes: Int) throws(SourceFileError) -> SourceBytes {
        // O_NONBLOCK: a FIFO named as input is refused by fstat below instead of blocking the open.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            let code = errno
            throw SourceFileError(kind: code == ENOENT || code == ENOTDIR ? .notFound : .unreadable,
                                  path: path, reason: "cannot open: \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw SourceFileError(kind: .unreadable, path: path, reason: "cannot stat: \(String(cString: strerror(errno)))")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw SourceFileError(kind: .notRegularFile, path: path, reason: "not a regular file")
        }
        let size = Int(status.st_size)
        guard size <= maxBytes else {
            throw SourceFileError(kind: .tooLarge, path: path, reason: "file is \(size) bytes, over the \(maxBytes)-byte limit")
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, size), alignment: 16)
        var filled = 0
        while filled < size {
            let got = Glibc.read(descriptor, buffer.baseAddress! + filled, size - filled)
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else {
                let reason = got < 0 ? String(cString: strerror(errno)) : "file shrank while being read"
                buffer.deallocate()
                throw SourceFileError(kind: .unreadable, path: path, reason: "cannot read: \(reason)")
            }
            filled += got
        }
        let fileStatus = FileStatus(size: size,
                                    modifiedNanoseconds: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                                    inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
        return SourceBytes(adopting: buffer, count: size, fileStatus: fileStatus)
    }
}

extension SourceBytes {
    /// `count` bytes that `fill` writes into a fresh buffer (the pipeline reads an asset's
    /// descriptor through its own system-call funnel), identified by `fileStatus`.
    public static func filled<Failure: Error>(count: Int, fileStatus: FileStatus,
                                              _ fill: (UnsafeMutableRawBufferPointer) throws(Failure) -> Void) throws(Failure) -> SourceBytes {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
        do {
            try fill(UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]))
        } catch {
            buffer.deallocate()
            throw error
        }
        return SourceBytes(adopting: buffer, count: count, fileStatus: fileStatus)
    }
}
