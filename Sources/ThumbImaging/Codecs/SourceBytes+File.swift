#if canImport(Glibc)
import Glibc
#endif
package import ThumbSystem

/// Why a source file could not be read (as opposed to decoded).
package struct SourceFileError: Error, Equatable, Sendable, CustomStringConvertible {
    package enum Kind: Sendable { case notFound, notRegularFile, unreadable, tooLarge }
    package var kind: Kind
    package var path: String
    package var reason: String
    package var description: String { "\(path): \(reason)" }
}

extension SourceBytes {
    /// Reads a regular file whole, refusing it from its size (before reading) when it is over
    /// `maxBytes`.
    package static func read(path: String, maxBytes: Int) throws(SourceFileError) -> SourceBytes {
        let descriptor: Int32
        do throws(SystemError) {
            // O_NONBLOCK: a FIFO named as input is refused by fstat below instead of blocking the open.
            descriptor = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        } catch {
            throw SourceFileError(kind: error.errno == ENOENT || error.errno == ENOTDIR ? .notFound : .unreadable,
                                  path: path, reason: "cannot \(error.description)")
        }
        defer { close(descriptor) }
        let status: FileStatus
        let mode: mode_t
        do throws(SystemError) {
            (status, mode) = try FileStatus.of(descriptor: descriptor, label: path)
        } catch {
            throw SourceFileError(kind: .unreadable, path: path, reason: "cannot \(error.description)")
        }
        guard (mode & S_IFMT) == S_IFREG else {
            throw SourceFileError(kind: .notRegularFile, path: path, reason: "not a regular file")
        }
        do throws(FileReadError) {
            return try read(descriptor: descriptor, status: status, maxBytes: maxBytes, label: path)
        } catch {
            switch error {
            case .tooLarge(let reason): throw SourceFileError(kind: .tooLarge, path: path, reason: reason)
            case .changed(let reason), .unreadable(let reason):
                throw SourceFileError(kind: .unreadable, path: path, reason: "cannot read: \(reason)")
            }
        }
    }

    /// Reads an open file whose `fstat` gave `status`, whole, refusing it from its size when it
    /// is over `maxBytes`, and proving it did not change while read (`WholeFile.read`). A large
    /// TIFF or a video is not read: it stays in its file (a descriptor of its own), and its
    /// decoder reads the parts it needs. A video is not held to `maxBytes` (a phone's clip is
    /// gigabytes): what its poster may read is `VideoLimits.maxBytesRead`.
    package static func read(descriptor: Int32, status: FileStatus, maxBytes: Int, label: String) throws(FileReadError) -> SourceBytes {
        let tooLarge = FileReadError.tooLarge(reason: "file is \(status.size) bytes, over the \(maxBytes)-byte limit")
        if let (window, format) = try SourceFileWindow.openIfStaysInFile(descriptor, status: status, label: label) {
            guard status.size <= maxBytes || format.row.staysInFile == .always else { throw tooLarge }
            return SourceBytes(file: window)
        }
        guard status.size <= maxBytes else { throw tooLarge }
        return try filled(count: status.size, fileStatus: status) { (buffer) throws(FileReadError) in
            try WholeFile.read(descriptor, status: status, label: label, into: buffer)
        }
    }
}

extension SourceBytes {
    /// `count` bytes that `fill` writes into a fresh buffer, identified by `fileStatus`.
    package static func filled<Failure: Error>(count: Int, fileStatus: FileStatus,
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
