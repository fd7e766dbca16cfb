import Foundation
import ThumbSystem

/// An encoded source image held in memory at a stable address, as the C decoders need.
public final class SourceBytes: @unchecked Sendable {
    // Immutable after init; @unchecked because the raw buffer is not Sendable by type.
    let buffer: UnsafeMutableRawBufferPointer

    public init(_ bytes: some Collection<UInt8>) {
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
    public let fileStatus: FileStatus?

    deinit { buffer.deallocate() }

    /// Length in bytes.
    public let count: Int

    var pointer: UnsafePointer<UInt8> {
        UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// What the first bytes say the file is, whatever its name.
    public var format: ImageFormat? {
        let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: count)
        if count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF { return .jpeg }
        // Only "\x89PNG": libpng checks the rest of the signature and names the damage
        // (a file mangled by a text-mode transfer, say).
        if count >= 4, bytes[0] == 0x89, bytes[1] == 0x50, bytes[2] == 0x4E, bytes[3] == 0x47 { return .png }
        return nil
    }

    /// A short description of the first bytes, for "not an image" errors.
    var leadingBytesDescription: String {
        if count == 0 { return "the file is empty" }
        let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: min(count, 4))
        return "starts with " + bytes.map { String(format: "0x%02X", $0) }.joined(separator: " ")
    }
}

/// The encoded formats thumbd reads and writes.
public enum ImageFormat: String, Sendable, Hashable {
    case jpeg, png

    public var fileExtension: String { self == .jpeg ? "jpg" : "png" }
    public var mediaType: String { self == .jpeg ? "image/jpeg" : "image/png" }
}
