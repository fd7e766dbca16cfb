import ThumbImaging
import ThumbWorker

/// The two sides of the render-worker protocol: the answer the daemon decodes from a worker that
/// may be compromised (hostile input in the strictest sense), and the order a worker decodes.
enum WorkerDoors {
    /// The order every answer is checked against: request 1, the image doors' four kinds (fill
    /// and circle, radius with an attention crop, fit, a tiny PNG upscale), default limits.
    static let requestID: UInt64 = 1
    static let limits = ImageLimits()

    /// Decodes a worker's answer; true when it was accepted.
    @discardableResult
    static func answer(_ bytes: [UInt8]) -> Bool {
        guard let answer = try? WorkerAnswer.decode(frame: bytes, requestID: requestID, requests: ImageDoors.requests, limits: limits,
                                                    placeholder: .always) else {
            return false
        }
        _ = (answer.placeholder?.thumbHashBase64, answer.placeholder?.averageColorHex)
        for placement in answer.placements { _ = (placement.shape.utf8.count, placement.centre.centreX + placement.centre.centreY) }
        // What the daemon does next with an accepted answer: its results, every one, in its own terms.
        for result in answer.results {
            switch result {
            case .success(let thumbnail):
                _ = (thumbnail.bytes.count, thumbnail.width * thumbnail.height, thumbnail.warning?.count, thumbnail.crop.x + thumbnail.crop.width)
            case .failure(let failure): _ = failure.description
            }
        }
        return true
    }

    /// Decodes a render order as the worker does; an accepted order must encode to exactly the
    /// bytes it came from (every field is carried whole, so anything else is a lost field).
    @discardableResult
    static func render(_ bytes: [UInt8]) -> Bool {
        guard let order = try? WorkerRenderOrder.decode(frame: bytes) else { return false }
        precondition((try? order.encode()) == bytes, "a render order does not survive its own encoding")
        _ = WorkerAnswer.maxPayloadBytes(requestCount: order.requests.count, limits: order.limits)
        for request in order.requests { FuzzCatalog.exercise(request.kind, scales: [request.scale]) }
        return true
    }
}
