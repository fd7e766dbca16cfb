package import ThumbImaging
package import ThumbSystem

/// Daemon to worker: render these thumbnails of the file whose descriptor comes with the frame.
package struct WorkerRenderOrder: Sendable, Equatable {
    package var requestID: UInt64
    /// The source as the daemon's `fstat` saw it: the worker reads exactly this version or fails.
    package var status: FileStatus
    /// Names the source in messages (the asset's path).
    package var label: String
    package var limits: ImageLimits
    package var tuning: ShrinkPlan.Tuning
    package var requests: [ThumbnailRequest]
    /// Whether the worker computes the source's placeholder from the same decode and answers with it.
    package var placeholder: PlaceholderDemand

    package init(requestID: UInt64, status: FileStatus, label: String, limits: ImageLimits, tuning: ShrinkPlan.Tuning,
                 requests: [ThumbnailRequest], placeholder: PlaceholderDemand = .skip) {
        self.requestID = requestID
        self.status = status
        self.label = label
        self.limits = limits
        self.tuning = tuning
        self.requests = requests
        self.placeholder = placeholder
    }

    package func encode() throws(WorkerProtocolError) -> [UInt8] {
        guard !requests.isEmpty, requests.count <= WorkerProtocol.maxRequestsPerOrder else {
            throw WorkerProtocolError(field: "render.requests.count",
                                      problem: "\(requests.count), not 1...\(WorkerProtocol.maxRequestsPerOrder)")
        }
        var writer = FrameWriter(type: .render, requestID: requestID, reservingPayloadBytes: 128 + 96 * requests.count)
        writer.fileStatus(status)
        writer.string(label)
        writer.limits(limits)
        writer.tuning(tuning)
        writer.uint8(placeholder.rawValue)
        writer.count(requests.count)
        for request in requests { writer.request(request) }
        return try writer.finish(maxPayloadBytes: WorkerProtocol.maxRenderPayloadBytes)
    }

    /// A whole render frame (header and payload).
    package static func decode(frame: [UInt8]) throws(WorkerProtocolError) -> WorkerRenderOrder {
        let header = try WorkerFrameHeader.decode(frame, maxPayloadBytes: WorkerProtocol.maxRenderPayloadBytes)
        try header.expect(.render)
        try header.expectPayload(in: frame)
        var reader = FrameReader(frame, from: WorkerFrameHeader.byteCount, field: "render")
        let status = try reader.fileStatus("render.status")
        let label = try reader.string("render.label")
        let limits = try reader.limits("render.limits")
        let tuning = try reader.tuning("render.tuning")
        let placeholderCode = try reader.uint8("render.placeholder")
        guard let placeholder = PlaceholderDemand(rawValue: placeholderCode) else {
            throw WorkerProtocolError(field: "render.placeholder", problem: "\(placeholderCode) is not 0 (skip), 1 (if whole frame) or 2 (always)")
        }
        let count = try reader.count(max: WorkerProtocol.maxRequestsPerOrder, "render.requests.count")
        guard count > 0 else { throw WorkerProtocolError(field: "render.requests.count", problem: "no requests") }
        var requests: [ThumbnailRequest] = []
        for index in 0..<count { requests.append(try reader.request("render.requests[\(index)]")) }
        try reader.finish()
        return WorkerRenderOrder(requestID: header.requestID, status: status, label: label, limits: limits, tuning: tuning,
                                 requests: requests, placeholder: placeholder)
    }
}

/// Worker to daemon, once: the sandbox is in place and the worker waits for orders.
package struct WorkerHello: Sendable, Equatable {
    package var pid: Int32

    package init(pid: Int32) { self.pid = pid }

    package func encode() -> [UInt8] {
        var writer = FrameWriter(type: .hello, requestID: 0)
        writer.uint16(WorkerProtocol.version)
        writer.uint32(UInt32(bitPattern: pid))
        // A hello is a few bytes: it always fits.
        return (try? writer.finish(maxPayloadBytes: WorkerProtocol.maxHelloPayloadBytes)) ?? []
    }

    package static func decode(frame: [UInt8]) throws(WorkerProtocolError) -> WorkerHello {
        let header = try WorkerFrameHeader.decode(frame, maxPayloadBytes: WorkerProtocol.maxHelloPayloadBytes)
        try header.expect(.hello, requestID: 0)
        try header.expectPayload(in: frame)
        var reader = FrameReader(frame, from: WorkerFrameHeader.byteCount, field: "hello")
        let version = try reader.uint16("hello.version")
        guard version == WorkerProtocol.version else {
            throw WorkerProtocolError(field: "hello.version", problem: "version \(version), expected \(WorkerProtocol.version)")
        }
        let pid = Int32(bitPattern: try reader.uint32("hello.pid"))
        try reader.finish()
        return WorkerHello(pid: pid)
    }
}

extension WorkerFrameHeader {
    /// A whole frame holds exactly the payload its header announces.
    func expectPayload(in frame: [UInt8]) throws(WorkerProtocolError) {
        let actual = frame.count - WorkerFrameHeader.byteCount
        guard actual == payloadBytes else {
            throw WorkerProtocolError(field: "frame.payloadLength",
                                      problem: "announces \(payloadBytes) bytes, the frame has \(max(0, actual))")
        }
    }
}
