package import ThumbImaging
package import ThumbSystem

/// Why one thumbnail of a worker's render failed: the decoder's or encoder's typed failure, or
/// the source's bytes could not be read from the descriptor it was passed.
package enum WorkerRenderFailure: Error, Equatable, Sendable, CustomStringConvertible {
    case imaging(ImagingError)
    case read(FileReadError)

    package var description: String {
        switch self {
        case .imaging(let error): error.description
        case .read(.tooLarge(let reason)): "over a limit: \(reason)"
        case .read(.changed(let reason)), .read(.unreadable(let reason)): "cannot read: \(reason)"
        }
    }
}

/// Worker to daemon: one result per request of the order, in its order, and the CPU time the
/// worker spent on it (reading, decoding, encoding).
package struct WorkerAnswer: Sendable {
    package var results: [Result<Thumbnail, WorkerRenderFailure>]
    package var cpuSeconds: Double
    /// The source's placeholder, when the order asked for it and the decode succeeded.
    package var placeholder: Placeholder?
    /// Where attention placed the order's crops (`ThumbnailSet.placements`).
    package var placements: [AttentionPlacement]
    /// What the source's first bytes said it was (nil: none of the table's formats, or unread),
    /// as its row's `wireTag`.
    package var sourceFormat: SourceFormat?

    package init(results: [Result<Thumbnail, WorkerRenderFailure>], cpuSeconds: Double, placeholder: Placeholder? = nil,
                 placements: [AttentionPlacement] = [], sourceFormat: SourceFormat? = nil) {
        self.results = results
        self.cpuSeconds = cpuSeconds
        self.placeholder = placeholder
        self.placements = placements
        self.sourceFormat = sourceFormat
    }

    /// The wire tag of "no format".
    static let noSourceFormatTag: UInt8 = 0xFF

    /// Longest CPU time an answer may claim: a render runs seconds, never days; the bound keeps a
    /// NaN or a huge number out of the daemon's CPU accounting.
    static let maxCPUSeconds = 1_000_000.0

    /// Wire tags of a result.
    enum ResultTag: UInt8 { case thumbnail = 0, imagingFailure = 1, readFailure = 2 }
    enum ImagingErrorTag: UInt8 {
        case unsupportedFormat = 0, undecodable = 1, tooLarge = 2, outputTooLarge = 3, cancelled = 4, encodingFailed = 5
    }
    enum ReadErrorTag: UInt8 { case tooLarge = 0, changed = 1, unreadable = 2 }

    /// The frame for `order`. Any thumbnail past its bound (`maxEncodedBytes`), or past the
    /// answer's (`maxPayloadBytes`), goes as a failure instead, so that what is sent always passes
    /// the daemon's checks.
    package func encode(for order: WorkerRenderOrder) -> [UInt8] {
        let bound = Self.maxPayloadBytes(requestCount: order.requests.count, limits: order.limits)
        var writer = FrameWriter(type: .answer, requestID: order.requestID,
                                 reservingPayloadBytes: results.reduce(64) { $0 + ((try? $1.get().bytes.count) ?? 64) })
        writer.double(cpuSeconds.isFinite ? min(max(cpuSeconds, 0), Self.maxCPUSeconds) : 0)
        writer.count(results.count)
        for (index, result) in results.enumerated() {
            var result = result
            if case .success(let thumbnail) = result {
                // Room for this thumbnail's bytes, and for the fixed part of it and of every result after it.
                let payloadBytes = writer.bytes.count - WorkerFrameHeader.byteCount
                let needed = payloadBytes + thumbnail.bytes.count + (results.count - index) * Self.maxResultOverheadBytes
                if thumbnail.width.multipliedReportingOverflow(by: thumbnail.height).partialValue > order.limits.maxOutputPixels {
                    result = .failure(.imaging(.outputTooLarge(
                        reason: "a \(thumbnail.width)x\(thumbnail.height) output exceeds the \(order.limits.maxOutputPixels)-pixel output limit")))
                } else if thumbnail.bytes.count > (order.requests.indices.contains(index)
                    ? Self.maxEncodedBytes(width: thumbnail.width, height: thumbnail.height, request: order.requests[index], limits: order.limits)
                    : Self.maxEncodedBytes(width: thumbnail.width, height: thumbnail.height)) {
                    result = .failure(.imaging(.encodingFailed(
                        reason: "the encoder wrote \(thumbnail.bytes.count) bytes for \(thumbnail.width)x\(thumbnail.height) pixels")))
                } else if needed > bound {
                    result = .failure(.imaging(.outputTooLarge(
                        reason: "the thumbnails of this source exceed the \(bound)-byte bound of one worker answer")))
                }
            }
            writer.result(result)
        }
        writer.placeholder(order.placeholder == .skip ? nil : placeholder)
        writer.placements(placements, of: order.requests)
        writer.uint8(sourceFormat?.row.wireTag ?? Self.noSourceFormatTag)
        // Cannot fail: every result was fitted within the bound above.
        return (try? writer.finish(maxPayloadBytes: bound)) ?? []
    }

    /// A whole answer frame (header and payload) to `requests` under `limits`, as the daemon
    /// decodes it: hostile input, every field checked.
    package static func decode(frame: [UInt8], requestID: UInt64, requests: [ThumbnailRequest], limits: ImageLimits,
                               placeholder demand: PlaceholderDemand = .skip) throws(WorkerProtocolError) -> WorkerAnswer {
        let header = try WorkerFrameHeader.decode(frame, maxPayloadBytes: maxPayloadBytes(requestCount: requests.count, limits: limits))
        try header.expect(.answer, requestID: requestID)
        try header.expectPayload(in: frame)
        var reader = FrameReader(frame, from: WorkerFrameHeader.byteCount, field: "answer")
        let cpuSeconds = try reader.double("answer.cpuSeconds")
        guard cpuSeconds.isFinite, (0...maxCPUSeconds).contains(cpuSeconds) else {
            throw WorkerProtocolError(field: "answer.cpuSeconds", problem: "\(cpuSeconds), not 0...\(maxCPUSeconds)")
        }
        let count = try reader.count(max: WorkerProtocol.maxRequestsPerOrder, "answer.results.count")
        guard count == requests.count else {
            throw WorkerProtocolError(field: "answer.results.count", problem: "\(count) results for \(requests.count) requests")
        }
        var results: [Result<Thumbnail, WorkerRenderFailure>] = []
        for (index, request) in requests.enumerated() {
            results.append(try reader.result("answer.results[\(index)]", request: request, limits: limits))
        }
        let placeholder = try reader.placeholder("answer.placeholder")
        if placeholder != nil && demand == .skip {
            throw WorkerProtocolError(field: "answer.placeholder", problem: "a placeholder the order did not ask for")
        }
        let placements = try reader.placements("answer.placements", requests: requests)
        let formatTag = try reader.uint8("answer.sourceFormat")
        var sourceFormat: SourceFormat?
        if formatTag != noSourceFormatTag {
            guard let format = SourceFormat(wireTag: formatTag) else {
                throw WorkerProtocolError(field: "answer.sourceFormat", problem: "tag \(formatTag) names no format of this build")
            }
            sourceFormat = format
        }
        try reader.finish()
        return WorkerAnswer(results: results, cpuSeconds: cpuSeconds, placeholder: placeholder, placements: placements,
                            sourceFormat: sourceFormat)
    }
}
