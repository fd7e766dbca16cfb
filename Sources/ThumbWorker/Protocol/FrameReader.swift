/// Reads the fields of a frame in order. Every read is bounds-checked against what remains, every
/// count against its bound, and a failure names the field: nothing here traps on any input.
struct FrameReader {
    private let bytes: [UInt8]
    private var offset: Int
    /// The message being read, for errors about the frame as a whole.
    private let message: String

    init(_ bytes: [UInt8], from offset: Int = 0, field message: String) {
        self.bytes = bytes
        self.offset = min(max(0, offset), bytes.count)
        self.message = message
    }

    var remainingBytes: Int { bytes.count - offset }

    mutating func raw(_ count: Int, _ field: @autoclosure () -> String) throws(WorkerProtocolError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= remainingBytes else {
            throw WorkerProtocolError(field: field(), problem: "truncated: \(count) bytes needed, \(remainingBytes) left")
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    private mutating func integer<Value: FixedWidthInteger>(_: Value.Type, _ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Value {
        let slice = try raw(MemoryLayout<Value>.size, field())
        var value = Value.zero
        for (shift, byte) in slice.enumerated() { value |= Value(byte) << (shift * 8) }
        return value
    }

    mutating func uint8(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> UInt8 { try integer(UInt8.self, field()) }
    mutating func uint16(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> UInt16 { try integer(UInt16.self, field()) }
    mutating func uint32(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> UInt32 { try integer(UInt32.self, field()) }
    mutating func uint64(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> UInt64 { try integer(UInt64.self, field()) }
    /// Any 64-bit value (Int is 64 bits wide on every platform thumbd builds for).
    mutating func int(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Int {
        Int(truncatingIfNeeded: Int64(bitPattern: try uint64(field())))
    }
    mutating func double(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Double {
        Double(bitPattern: try uint64(field()))
    }

    /// 0 or 1; anything else is an error, not "true".
    mutating func bool(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Bool {
        switch try uint8(field()) {
        case 0: return false
        case 1: return true
        case let other: throw WorkerProtocolError(field: field(), problem: "\(other) is neither 0 nor 1")
        }
    }

    /// A count of at most `max`.
    mutating func count(max: Int, _ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Int {
        let value = try uint32(field())
        guard UInt64(value) <= UInt64(Swift.max(0, max)) else {
            throw WorkerProtocolError(field: field(), problem: "\(value), over the bound of \(max)")
        }
        return Int(value)
    }

    /// A tag that must name one of `Tag`'s cases.
    mutating func tag<Tag: RawRepresentable<UInt8>>(_: Tag.Type, _ field: @autoclosure () -> String) throws(WorkerProtocolError) -> Tag {
        let raw = try uint8(field())
        guard let tag = Tag(rawValue: raw) else { throw WorkerProtocolError(field: field(), problem: "unknown tag \(raw)") }
        return tag
    }

    mutating func string(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> String {
        let length = try count(max: WorkerProtocol.maxStringBytes, field() + ".length")
        let utf8 = try raw(length, field())
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw WorkerProtocolError(field: field(), problem: "not UTF-8")
        }
        return string
    }

    mutating func optionalString(_ field: @autoclosure () -> String) throws(WorkerProtocolError) -> String? {
        try bool(field() + ".present") ? try string(field()) : nil
    }

    /// Bytes with a length of at most `maxBytes`.
    mutating func data(maxBytes: Int, _ field: @autoclosure () -> String) throws(WorkerProtocolError) -> [UInt8] {
        let length = try count(max: maxBytes, field() + ".length")
        return Array(try raw(length, field()))
    }

    /// The message must end exactly here.
    func finish() throws(WorkerProtocolError) {
        guard remainingBytes == 0 else {
            throw WorkerProtocolError(field: message, problem: "\(remainingBytes) bytes after the last field")
        }
    }
}
