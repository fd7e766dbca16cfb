import Foundation
package import ThumbSystem

/// An encoded source image held in memory at a stable address, as the C decoders need.
package final class SourceBytes: @unchecked Sendable {
    // Immutable after init; @unchecked because the raw buffer is not Sendable by type.
    let buffer: UnsafeMutableRawBufferPointer

    package init(_ bytes: some Collection<UInt8>) {
        buffer = .allocate(byteCount: max(1, bytes.count), alignment: 16)
        _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
        fileStatus = nil
    }

    init(adopting buffer: UnsafeMutableRawBufferPointer, count: Int, fileStatus: FileStatus?) {
        self.buffer = buffer
        self.count = count
        self.fileStatus = fileStatus
    }

    /// What `fstat` said of the file the bytes were read from (nil for bytes from memory):
    /// the identity of exactly the version that was read.
    package let fileStatus: FileStatus?

    deinit { buffer.deallocate() }

    /// Length in bytes.
    package let count: Int

    var pointer: UnsafePointer<UInt8> {
        UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// What the first bytes say the file is, whatever its name.
    package var format: SourceFormat? {
        SourceFormat.sniff(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
    }

    /// A short description of the first bytes, for "not an image" errors.
    var leadingBytesDescription: String {
        if count == 0 { return "the file is empty" }
        let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: min(count, 4))
        return "starts with " + bytes.map { String(format: "0x%02X", $0) }.joined(separator: " ")
    }
}

/// The encoded formats thumbd writes.
package enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, avif

    package var fileExtension: String { self == .jpeg ? "jpg" : rawValue }
    package var mediaType: String { "image/" + rawValue }
}
