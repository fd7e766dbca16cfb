#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// A source left in its file (see `SourceBytes`): a descriptor of its own, the version `fstat`
/// gave when it was opened, and its first bytes for sniffing. Reads are positioned (`pread`), so
/// the caller's descriptor and its offset are not touched. Closed at deinit.
final class SourceFileWindow: @unchecked Sendable {
    // Immutable after init; @unchecked because of the head's raw buffer.
    let descriptor: Int32
    let status: FileStatus
    let label: String
    private let headBytes: UnsafeMutableRawBufferPointer

    /// TIFFs of this many bytes or more stay in their file; a smaller one costs less to read
    /// whole than the reads libtiff would make of it.
    static let minimumBytes = 1 << 20
    static let headCapacity = 64

    private init(descriptor: Int32, status: FileStatus, label: String, head: UnsafeMutableRawBufferPointer) {
        self.descriptor = descriptor
        self.status = status
        self.label = label
        headBytes = head
    }

    deinit {
        close(descriptor)
        headBytes.deallocate()
    }

    var head: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: headBytes[..<min(headBytes.count, status.size)]) }

    /// The file open on `descriptor` (whose `fstat` gave `status`) as a window when its format's
    /// row says it stays in its file (`SourceFormatRow.staysInFile`: a TIFF from
    /// `minimumBytes`, a video always), with that format; nil otherwise (read it whole).
    static func openIfStaysInFile(_ descriptor: Int32, status: FileStatus,
                                  label: String) throws(FileReadError) -> (window: SourceFileWindow, format: SourceFormat)? {
        guard status.size > 0 else { return nil }
        let head = UnsafeMutableRawBufferPointer.allocate(byteCount: headCapacity, alignment: 16)
        head.initializeMemory(as: UInt8.self, repeating: 0)
        let headCount = min(headCapacity, status.size)
        do throws(FileReadError) {
            try read(descriptor, at: 0, into: UnsafeMutableRawBufferPointer(rebasing: head[..<headCount]), label: label)
        } catch {
            head.deallocate()
            throw error
        }
        guard let format = SourceFormat.sniff(UnsafeRawBufferPointer(rebasing: head[..<headCount])) else {
            head.deallocate()
            return nil
        }
        switch format.row.staysInFile {
        case .always: break
        case .fromBytes(let minimum) where status.size >= minimum: break
        case .never, .fromBytes:
            head.deallocate()
            return nil
        }
        let copy: Int32
        do throws(SystemError) {
            copy = try systemCall("duplicate the descriptor of \(label)") { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        } catch {
            head.deallocate()
            throw .unreadable(reason: error.description)
        }
        return (SourceFileWindow(descriptor: copy, status: status, label: label, head: head), format)
    }

    /// What the first bytes of the open file on `descriptor` say it is (a positioned read: the
    /// descriptor's offset is left alone); nil for none of the table's formats or an unreadable file.
    static func sniff(_ descriptor: Int32) -> SourceFormat? {
        var head = [UInt8](repeating: 0, count: headCapacity)
        let count = (try? head.withUnsafeMutableBytes { buffer in
            try systemCall("read for sniffing") { pread(descriptor, buffer.baseAddress, buffer.count, 0) }
        }) ?? 0
        return head.withUnsafeBytes { SourceFormat.sniff(UnsafeRawBufferPointer(rebasing: $0.prefix(max(0, count)))) }
    }

    /// Fills `buffer` from byte `offset` of the file; a file shorter than its `fstat` said is
    /// one that changed.
    func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws(FileReadError) {
        try Self.read(descriptor, at: offset, into: buffer, label: label)
    }

    private static func read(_ descriptor: Int32, at offset: Int, into buffer: UnsafeMutableRawBufferPointer,
                             label: String) throws(FileReadError) {
        var filled = 0
        while filled < buffer.count {
            let got: Int
            do throws(SystemError) {
                got = try systemCall("read \(label)") {
                    pread(descriptor, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + filled))
                }
            } catch {
                throw .unreadable(reason: error.description)
            }
            guard got > 0 else { throw .changed(reason: "\(label) shrank while being read (\(offset + filled) bytes)") }
            filled += got
        }
    }

    /// Throws unless the file is still the version that was opened (same size and mtime): the
    /// proof `WholeFile.read` gives for a whole read, given after a decode that read parts.
    func confirmUnchanged() throws(FileReadError) {
        let now: FileStatus
        do throws(SystemError) {
            now = try FileStatus.of(descriptor: descriptor, label: label).0
        } catch {
            throw .unreadable(reason: error.description)
        }
        guard now.size == status.size, now.modifiedNanoseconds == status.modifiedNanoseconds else {
            throw .changed(reason: "\(label) was modified while being decoded")
        }
    }
}
