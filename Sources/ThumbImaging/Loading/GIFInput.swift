import CGIF

/// The source bytes as giflib reads them: one cursor over memory, every read bounds-checked.
/// giflib's own file input (fdopen) is not used: the sandboxed worker has no open, and memory
/// is where the bytes already are.
final class GIFInput {
    private let source: SourceBytes
    /// Bytes consumed so far: where giflib's next read starts.
    private(set) var position = 0
    /// A read asked for more than was left (giflib then says "Failed to read from given file").
    private(set) var ranShort = false

    init(_ source: SourceBytes) { self.source = source }

    var count: Int { source.count }

    /// Borrowed by giflib as `UserData`: the loader keeps this object alive while the handle is open.
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// giflib's `InputFunc`: copies up to `wanted` bytes and returns how many it copied.
    static let read: InputFunc = { file, destination, wanted in
        guard let file, let destination, let userData = file.pointee.UserData, wanted > 0 else { return 0 }
        return Unmanaged<GIFInput>.fromOpaque(userData).takeUnretainedValue().read(into: destination, count: Int(wanted))
    }

    private func read(into destination: UnsafeMutablePointer<UInt8>, count wanted: Int) -> Int32 {
        let copied = min(wanted, source.count - position)
        if copied < wanted { ranShort = true }
        if copied > 0 { destination.update(from: source.pointer + position, count: copied) }
        position += copied
        return Int32(copied)
    }

    /// The byte `offset` bytes past the cursor, nil past the end (giflib has not read it yet).
    func peek(_ offset: Int) -> UInt8? {
        guard offset >= 0, offset < source.count - position else { return nil }
        return source.pointer[position + offset]
    }

    /// Consumes the next data sub-block (a length byte, then that many bytes) and hands its bytes
    /// to `body`; nil at the end of the data or at the block terminator (length 0).
    func nextSubBlock<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard let length = peek(0), length > 0 else {
            if peek(0) != nil { position += 1 }
            return nil
        }
        guard Int(length) < source.count - position else {
            ranShort = true
            position = source.count
            return nil
        }
        let bytes = UnsafeBufferPointer(start: source.pointer + position + 1, count: Int(length))
        position += 1 + Int(length)
        return body(bytes)
    }

    /// A little-endian 16-bit word `offset` bytes past the cursor.
    func peekWord(_ offset: Int) -> Int? {
        guard let low = peek(offset), let high = peek(offset + 1) else { return nil }
        return Int(low) | Int(high) << 8
    }
}

/// giflib's words for its error codes, with what the input says about where the data ended.
enum GIFReason {
    static func message(_ code: Int32) -> String {
        if let text = GifErrorString(code) { return String(cString: text) }
        return "giflib error \(code)"
    }

    /// `context: giflib's message` plus "the data ends at byte N" when a read ran past the end;
    /// giflib leaves its code at 0 for a few truncations (the LZW code size), said as such.
    static func describe(_ context: String, code: Int32, input: GIFInput) -> String {
        let end = "the data ends at byte \(input.count)"
        if code == D_GIF_SUCCEEDED { return "GIF \(context): " + (input.ranShort ? end : "giflib gave no reason") }
        return "GIF \(context): \(message(code))" + (input.ranShort ? " (\(end))" : "")
    }
}
