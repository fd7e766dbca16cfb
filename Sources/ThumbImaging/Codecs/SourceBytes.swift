import Foundation
import Synchronization
package import ThumbSystem

/// An encoded source image: in memory at a stable address, as the C decoders need, or (a large
/// TIFF) left in its file and read where its decoder asks.
///
/// Why a TIFF stays in its file: a TIFF is laid out for random access (strips, tiles, a pyramid
/// of reduced pages, the directory often at the end), and libtiff reads only the parts of the
/// page it decodes. A striped LZW photo is 20–35 MB of which the render needs one strip at a
/// time, and a pyramid's small level is a few percent of the file: reading it whole doubled a
/// render's memory (libvips reads through too). Every other format is read whole: their
/// decoders take memory, and their files are a few megabytes.
package final class SourceBytes: @unchecked Sendable {
    // Immutable after init, except `materialized` (behind its mutex); @unchecked because the
    // raw buffers are not Sendable by type.
    private enum Storage {
        case memory(UnsafeMutableRawBufferPointer)
        case file(SourceFileWindow)
    }

    private let storage: Storage
    /// A file-backed source's bytes, read whole the first time something other than its TIFF
    /// decoder asks for them (a test worker's fault hook, say).
    private let materialized = Mutex<UnsafeMutableRawBufferPointer?>(nil)

    package init(_ bytes: some Collection<UInt8>) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
        _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        storage = .memory(buffer)
        count = bytes.count
        fileStatus = nil
    }

    init(adopting buffer: UnsafeMutableRawBufferPointer, count: Int, fileStatus: FileStatus?) {
        storage = .memory(buffer)
        self.count = count
        self.fileStatus = fileStatus
    }

    init(file: SourceFileWindow) {
        storage = .file(file)
        count = file.status.size
        fileStatus = file.status
    }

    /// What `fstat` said of the file the bytes were read from (nil for bytes from memory):
    /// the identity of exactly the version that was read.
    package let fileStatus: FileStatus?

    deinit {
        if case .memory(let buffer) = storage { buffer.deallocate() }
        materialized.withLock { $0?.deallocate() }
    }

    /// Length in bytes.
    package let count: Int

    /// The open file a large TIFF is read from, or nil when the bytes are in memory.
    var file: SourceFileWindow? {
        if case .file(let window) = storage { return window }
        return nil
    }

    /// The bytes in memory (a file-backed source's read whole, once). A file that cannot be
    /// read whole any more (changed, gone) gives zeros past what was read: its decoder then
    /// fails on the content, and nothing reads outside the buffer.
    private var bytes: UnsafeMutableRawBufferPointer {
        switch storage {
        case .memory(let buffer): return buffer
        case .file(let window):
            return materialized.withLock { buffer in
                if let buffer { return buffer }
                let whole = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
                whole.initializeMemory(as: UInt8.self, repeating: 0)
                _ = try? window.read(at: 0, into: UnsafeMutableRawBufferPointer(rebasing: whole[..<count]))
                buffer = whole
                return whole
            }
        }
    }

    var pointer: UnsafePointer<UInt8> {
        UnsafePointer(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// The first bytes, without reading a file-backed source whole.
    private var head: UnsafeRawBufferPointer {
        switch storage {
        case .memory(let buffer): UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)
        case .file(let window): window.head
        }
    }

    /// What the first bytes say the file is, whatever its name.
    package var format: SourceFormat? { SourceFormat.sniff(head) }

    /// A short description of the first bytes, for "not an image" errors.
    var leadingBytesDescription: String {
        if count == 0 { return "the file is empty" }
        return "starts with " + head.prefix(4).map { String(format: "0x%02X", $0) }.joined(separator: " ")
    }

    /// The bytes, for code in this package that inspects a source as it is (the test worker's
    /// fault hook reads its instructions from the first line).
    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: bytes.baseAddress, count: count))
    }
}

/// The encoded formats thumbd writes.
package enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, avif

    package var fileExtension: String { self == .jpeg ? "jpg" : rawValue }
    package var mediaType: String { "image/" + rawValue }
}
