package import ThumbImaging
import ThumbSystem

extension WorkerAnswer {
    /// Largest encoded thumbnail of `width` × `height` pixels: a JPEG's worst case is 6 bytes a
    /// pixel over sides padded to the 16-pixel MCU (libjpeg-turbo's tj3JPEGBufSize for 4:4:4), a
    /// PNG's about 4 (8-bit RGBA stored: a filter byte a row, 5 bytes a zlib block, 12 an IDAT),
    /// and the encoder writes no metadata; 64 KiB covers the headers. Sides are 1...8192.
    static func maxEncodedBytes(width: Int, height: Int) -> Int {
        let side = 1...SlotBounds.maxPixelsPerSide
        let paddedWidth = min(max(width, side.lowerBound), side.upperBound) + 16
        let paddedHeight = min(max(height, side.lowerBound), side.upperBound) + 16
        return 6 * paddedWidth * paddedHeight + (64 << 10)
    }

    /// The same for `request`: an output that keeps animation may hold up to
    /// `limits.maxAnimationFrames` frames, each within a still's bound (the answer's own bound
    /// still caps the total).
    static func maxEncodedBytes(width: Int, height: Int, request: ThumbnailRequest, limits: ImageLimits) -> Int {
        let still = maxEncodedBytes(width: width, height: height)
        guard request.keepsAnimation else { return still }
        let frames = min(max(limits.maxAnimationFrames, 1), 1 << 20)
        return min(still.multipliedReportingOverflow(by: frames).partialValue, WorkerProtocol.maxAnswerPayloadBytes)
    }

    /// The fixed part of one result (tags, sides, lengths and one string: a warning or a reason).
    static let maxResultOverheadBytes = 96 + WorkerProtocol.maxStringBytes

    /// The bound of an answer to `requestCount` requests: each the largest output `limits` allow
    /// (`maxOutputPixels`, of which the widest side is at most 8192) at the worst case of
    /// `maxEncodedBytes`, capped at `WorkerProtocol.maxAnswerPayloadBytes`. At the default limits
    /// (16.7 MP) that is ~102 MB a thumbnail: real thumbnails are a few KB to a few MB.
    package static func maxPayloadBytes(requestCount: Int, limits: ImageLimits) -> Int {
        let pixels = min(max(limits.maxOutputPixels, 1), SlotBounds.outputPixelsCeiling)
        // The padding of the widest shape those pixels allow: (w + 16)(h + 16) ≤ pixels + 16 (w + h) + 256.
        let perThumbnail = 6 * (pixels + 16 * 2 * SlotBounds.maxPixelsPerSide + 256) + (64 << 10)
        let count = min(max(requestCount, 0), WorkerProtocol.maxRequestsPerOrder)
        return min(WorkerProtocol.maxAnswerPayloadBytes, 64 + count * (perThumbnail + maxResultOverheadBytes))
    }
}

extension FrameWriter {
    mutating func result(_ result: Result<Thumbnail, WorkerRenderFailure>) {
        switch result {
        case .success(let thumbnail):
            uint8(WorkerAnswer.ResultTag.thumbnail.rawValue)
            uint8(ImageFormatTag(thumbnail.format).rawValue)
            uint32(UInt32(clamping: thumbnail.width))
            uint32(UInt32(clamping: thumbnail.height))
            optionalString(thumbnail.warning)
            double(thumbnail.crop.x)
            double(thumbnail.crop.y)
            double(thumbnail.crop.width)
            double(thumbnail.crop.height)
            data(thumbnail.bytes)
        case .failure(.imaging(let error)):
            uint8(WorkerAnswer.ResultTag.imagingFailure.rawValue)
            let (tag, reason): (WorkerAnswer.ImagingErrorTag, String?) = switch error {
            case .unsupportedFormat(let reason): (.unsupportedFormat, reason)
            case .undecodable(let reason): (.undecodable, reason)
            case .tooLarge(let reason): (.tooLarge, reason)
            case .outputTooLarge(let reason): (.outputTooLarge, reason)
            case .cancelled: (.cancelled, nil)
            case .encodingFailed(let reason): (.encodingFailed, reason)
            }
            uint8(tag.rawValue)
            if let reason { string(reason) }
        case .failure(.read(let error)):
            uint8(WorkerAnswer.ResultTag.readFailure.rawValue)
            let (tag, reason): (WorkerAnswer.ReadErrorTag, String) = switch error {
            case .tooLarge(let reason): (.tooLarge, reason)
            case .changed(let reason): (.changed, reason)
            case .unreadable(let reason): (.unreadable, reason)
            }
            uint8(tag.rawValue)
            string(reason)
        }
    }
}

extension FrameReader {
    /// One result for `request`: a thumbnail must be of a format the request's encoder allows, of
    /// sides 1...8192 within `limits.maxOutputPixels`, its bytes within `maxEncodedBytes` and
    /// beginning as that format does (they are served with its media type).
    mutating func result(_ field: String, request: ThumbnailRequest,
                         limits: ImageLimits) throws(WorkerProtocolError) -> Result<Thumbnail, WorkerRenderFailure> {
        switch try tag(WorkerAnswer.ResultTag.self, field + ".tag") {
        case .thumbnail:
            let formatTag = try tag(ImageFormatTag.self, field + ".format")
            let format = formatTag.format
            switch (request.encoder.format, format) {
            case (.auto, .jpeg), (.auto, .png), (.jpeg, .jpeg), (.png, .png), (.webp, .webp), (.avif, .avif): break
            default:
                throw WorkerProtocolError(field: field + ".format", problem: "\(format) where the request asked for \(request.encoder.format)")
            }
            let side = 1...UInt32(SlotBounds.maxPixelsPerSide)
            let width = try uint32(field + ".width"), height = try uint32(field + ".height")
            guard side.contains(width), side.contains(height) else {
                throw WorkerProtocolError(field: field + ".width", problem: "\(width)x\(height), a side outside \(side)")
            }
            guard Int(width) * Int(height) <= limits.maxOutputPixels else {
                throw WorkerProtocolError(field: field + ".width",
                                          problem: "\(width)x\(height), over the \(limits.maxOutputPixels)-pixel output limit")
            }
            let warning = try optionalString(field + ".warning")
            let crop = try cropRectangle(field + ".crop", limits: limits)
            let bytes = try data(maxBytes: WorkerAnswer.maxEncodedBytes(width: Int(width), height: Int(height), request: request, limits: limits),
                                 field + ".bytes")
            let signature = formatTag.signature
            guard bytes.count >= signature.count, zip(bytes, signature).allSatisfy({ $1 == nil || $0 == $1 }) else {
                throw WorkerProtocolError(field: field + ".bytes", problem: "not a \(format) (starts with \(WorkerFrameHeader.hex(bytes.prefix(4))))")
            }
            return .success(Thumbnail(encoded: bytes, format: format, width: Int(width), height: Int(height), warning: warning,
                                      crop: crop))
        case .imagingFailure:
            let error: ImagingError = switch try tag(WorkerAnswer.ImagingErrorTag.self, field + ".error") {
            case .unsupportedFormat: .unsupportedFormat(reason: try string(field + ".reason"))
            case .undecodable: .undecodable(reason: try string(field + ".reason"))
            case .tooLarge: .tooLarge(reason: try string(field + ".reason"))
            case .outputTooLarge: .outputTooLarge(reason: try string(field + ".reason"))
            case .cancelled: .cancelled
            case .encodingFailed: .encodingFailed(reason: try string(field + ".reason"))
            }
            return .failure(.imaging(error))
        case .readFailure:
            let tag = try tag(WorkerAnswer.ReadErrorTag.self, field + ".error")
            let reason = try string(field + ".reason")
            let error: FileReadError = switch tag {
            case .tooLarge: .tooLarge(reason: reason)
            case .changed: .changed(reason: reason)
            case .unreadable: .unreadable(reason: reason)
            }
            return .failure(.read(error))
        }
    }
}

extension FrameWriter {
    /// Each placement as the index of the order's request it was placed for (the daemon knows
    /// that request's shape) and the crop's centre.
    mutating func placements(_ placements: [AttentionPlacement], of requests: [ThumbnailRequest]) {
        let indexed = placements.compactMap { placement in
            requests.firstIndex { $0.placementShape == placement.shape }.map { ($0, placement.centre) }
        }
        count(indexed.count)
        for (index, centre) in indexed {
            count(index)
            double(centre.x)
            double(centre.y)
        }
    }

    mutating func placeholder(_ placeholder: Placeholder?) {
        bool(placeholder != nil)
        guard let placeholder else { return }
        data(placeholder.thumbHash)
        for channel in [placeholder.averageRed, placeholder.averageGreen, placeholder.averageBlue, placeholder.averageAlpha] {
            uint8(channel)
        }
    }
}

extension FrameReader {
    /// A crop inside the largest source `limits` allow: finite, not negative, not past a side.
    mutating func cropRectangle(_ field: String, limits: ImageLimits) throws(WorkerProtocolError) -> CropRectangle {
        let x = try double(field + ".x"), y = try double(field + ".y")
        let width = try double(field + ".width"), height = try double(field + ".height")
        let side = 0...Double(max(limits.maxDimension, 1))
        guard side.contains(x), side.contains(y), side.contains(width), side.contains(height),
              side.contains(x + width), side.contains(y + height) else {
            throw WorkerProtocolError(field: field, problem: "\(x),\(y) \(width)x\(height) is not inside a \(side.upperBound)-pixel side")
        }
        return CropRectangle(x: x, y: y, width: width, height: height)
    }

    /// Placements for the order's attention crops: at most one a request, each naming one whose
    /// crop attention places, its centre a point of the unit square.
    mutating func placements(_ field: String, requests: [ThumbnailRequest]) throws(WorkerProtocolError) -> [AttentionPlacement] {
        let count = try count(max: requests.count, field + ".count")
        var placements: [AttentionPlacement] = []
        for entry in 0..<count {
            let index = try self.count(max: requests.count - 1, "\(field)[\(entry)].request")
            guard let shape = requests[index].placementShape else {
                throw WorkerProtocolError(field: "\(field)[\(entry)].request", problem: "request \(index) has no attention crop")
            }
            guard !placements.contains(where: { $0.shape == shape }) else {
                throw WorkerProtocolError(field: "\(field)[\(entry)].request", problem: "a second placement of \(shape)")
            }
            placements.append(AttentionPlacement(shape: shape, centre: try point("\(field)[\(entry)].centre")))
        }
        return placements
    }

    /// A placeholder of a ThumbHash of 5...`ThumbHash.maxBytes` bytes and a colour, or none.
    mutating func placeholder(_ field: String) throws(WorkerProtocolError) -> Placeholder? {
        guard try bool(field + ".present") else { return nil }
        let hash = try data(maxBytes: ThumbHash.maxBytes, field + ".thumbHash")
        guard hash.count >= 5 else {
            throw WorkerProtocolError(field: field + ".thumbHash", problem: "\(hash.count) bytes, a ThumbHash has at least 5")
        }
        return Placeholder(thumbHash: hash, averageRed: try uint8(field + ".red"), averageGreen: try uint8(field + ".green"),
                           averageBlue: try uint8(field + ".blue"), averageAlpha: try uint8(field + ".alpha"))
    }
}
