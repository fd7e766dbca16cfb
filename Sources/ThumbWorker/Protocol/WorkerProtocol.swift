/// The wire format between the daemon and its render workers, over a SOCK_STREAM socketpair.
///
/// Every message is one frame: a 20-byte header (magic "THWK", version, type, request id, payload
/// length; integers little-endian) and the payload. A stream socket, not SOCK_SEQPACKET: an answer
/// may be tens of megabytes, past what one datagram of an AF_UNIX socket can carry. Every length
/// is checked against a bound before anything is allocated for it: the daemon reads answers from
/// a process that parsed an attacker's file and may be the attacker's now.
package enum WorkerProtocol {
    /// Bumped whenever a field is added, removed or reordered: a worker of another build is refused.
    package static let version: UInt16 = 7
    /// "THWK".
    static let magic: [UInt8] = [0x54, 0x48, 0x57, 0x4B]
    /// A render order is a few kinds and a label: far below this even for a catalog of hundreds of kinds.
    package static let maxRenderPayloadBytes = 1 << 20
    /// The hard ceiling of an answer. The bound of one answer is derived from its requests (see
    /// `WorkerAnswer.maxPayloadBytes`); this caps it whatever the limits say.
    package static let maxAnswerPayloadBytes = 512 << 20
    /// A hello is a version and a pid.
    static let maxHelloPayloadBytes = 64
    /// Longest label, kind name, warning or failure reason carried, bytes (longer ones are cut on send).
    package static let maxStringBytes = 16 << 10
    /// Most thumbnails one render order asks for (kinds × scales of one source).
    package static let maxRequestsPerOrder = 1024
    /// Most scales one kind lists (`DisplayScale` allows 1 to 4; the field is carried whole).
    static let maxScalesPerKind = 64
}

/// What a frame carries.
package enum WorkerFrameType: UInt16, Sendable {
    /// Worker to daemon, once its sandbox is in place.
    case hello = 1
    /// Daemon to worker, with the source file's descriptor attached (SCM_RIGHTS).
    case render = 2
    /// Worker to daemon: the thumbnails or failures of one render order.
    case answer = 3
}

/// A frame or field that breaks the protocol: which field, and what is wrong with it.
package struct WorkerProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    package var field: String
    package var problem: String

    package init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    package var description: String { "\(field): \(problem)" }
}

/// The fixed part of every frame.
package struct WorkerFrameHeader: Sendable, Equatable {
    package static let byteCount = 20

    package var type: WorkerFrameType
    package var requestID: UInt64
    /// Bytes after the header.
    package var payloadBytes: Int

    package init(type: WorkerFrameType, requestID: UInt64, payloadBytes: Int) {
        self.type = type
        self.requestID = requestID
        self.payloadBytes = payloadBytes
    }

    /// The header at the start of `bytes` (at least `byteCount` of them), refusing a payload over
    /// `maxPayloadBytes` before anything is read or allocated for it.
    package static func decode(_ bytes: [UInt8], maxPayloadBytes: Int) throws(WorkerProtocolError) -> WorkerFrameHeader {
        var reader = FrameReader(bytes, field: "frame")
        let magic = try reader.raw(4, "frame.magic")
        guard magic.elementsEqual(WorkerProtocol.magic) else {
            throw WorkerProtocolError(field: "frame.magic", problem: "not a thumbd worker frame (starts with \(hex(magic)))")
        }
        let version = try reader.uint16("frame.version")
        guard version == WorkerProtocol.version else {
            throw WorkerProtocolError(field: "frame.version", problem: "version \(version), this build speaks \(WorkerProtocol.version)")
        }
        let rawType = try reader.uint16("frame.type")
        guard let type = WorkerFrameType(rawValue: rawType) else {
            throw WorkerProtocolError(field: "frame.type", problem: "unknown frame type \(rawType)")
        }
        let requestID = try reader.uint64("frame.requestID")
        let length = try reader.uint32("frame.payloadLength")
        guard UInt64(length) <= UInt64(max(0, maxPayloadBytes)) else {
            throw WorkerProtocolError(field: "frame.payloadLength",
                                      problem: "\(length) bytes, over the \(maxPayloadBytes)-byte bound of a \(type) frame")
        }
        return WorkerFrameHeader(type: type, requestID: requestID, payloadBytes: Int(length))
    }

    /// Checks what the reader expected of this frame.
    package func expect(_ type: WorkerFrameType, requestID: UInt64? = nil) throws(WorkerProtocolError) {
        guard self.type == type else {
            throw WorkerProtocolError(field: "frame.type", problem: "a \(self.type) frame where a \(type) frame was due")
        }
        if let requestID, self.requestID != requestID {
            throw WorkerProtocolError(field: "frame.requestID", problem: "request \(self.requestID), expected \(requestID)")
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return "0x" + (digits.count < 2 ? "0" + digits : digits)
        }.joined(separator: " ")
    }
}
