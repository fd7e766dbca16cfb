/// Builds one frame: the header, then fields appended little-endian; `finish` writes the length.
struct FrameWriter {
    private(set) var bytes: [UInt8]

    init(type: WorkerFrameType, requestID: UInt64, reservingPayloadBytes: Int = 256) {
        bytes = []
        bytes.reserveCapacity(WorkerFrameHeader.byteCount + reservingPayloadBytes)
        bytes += WorkerProtocol.magic
        uint16(WorkerProtocol.version)
        uint16(type.rawValue)
        uint64(requestID)
        uint32(0) // the payload length, written by finish
    }

    mutating func uint8(_ value: UInt8) { bytes.append(value) }
    mutating func uint16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func uint32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func uint64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func int(_ value: Int) { uint64(UInt64(bitPattern: Int64(value))) }
    /// The bit pattern, so that every value (NaN and infinities too) arrives as it was.
    mutating func double(_ value: Double) { uint64(value.bitPattern) }
    mutating func bool(_ value: Bool) { uint8(value ? 1 : 0) }

    /// A count of what follows (callers keep counts within the protocol's bounds).
    mutating func count(_ value: Int) { uint32(UInt32(clamping: value)) }

    /// UTF-8 with a length, cut on a character boundary at `WorkerProtocol.maxStringBytes`.
    mutating func string(_ value: String) {
        var utf8 = Array(value.utf8)
        if utf8.count > WorkerProtocol.maxStringBytes {
            var end = WorkerProtocol.maxStringBytes
            while end > 0 && utf8[end] & 0xC0 == 0x80 { end -= 1 } // not inside a multi-byte character
            utf8.removeSubrange(end...)
        }
        count(utf8.count)
        bytes += utf8
    }

    mutating func optionalString(_ value: String?) {
        bool(value != nil)
        if let value { string(value) }
    }

    mutating func data(_ value: [UInt8]) {
        count(value.count)
        bytes += value
    }

    /// The frame, its length written; refused when the payload is over `maxPayloadBytes`.
    consuming func finish(maxPayloadBytes: Int) throws(WorkerProtocolError) -> [UInt8] {
        let payload = bytes.count - WorkerFrameHeader.byteCount
        guard payload <= maxPayloadBytes, payload <= Int(UInt32.max) else {
            throw WorkerProtocolError(field: "frame.payloadLength", problem: "\(payload) bytes, over the \(maxPayloadBytes)-byte bound")
        }
        withUnsafeBytes(of: UInt32(payload).littleEndian) { length in
            for (index, byte) in length.enumerated() { bytes[WorkerFrameHeader.byteCount - 4 + index] = byte }
        }
        return bytes
    }
}
