import Dispatch
import Synchronization
import ThumbImaging
import ThumbPipeline

extension ThumbnailAPI {
    /// GET /v1/thumbnails/{kind}/{asset path}?scale&client&slot&token&priority&wait&as
    func thumbnail(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let rest = request.path.dropFirst("/v1/thumbnails/".count)
        guard let slash = rest.firstIndex(of: "/") else {
            return respond(.error(400, "badRequest", "expected /v1/thumbnails/{kind}/{asset path}"))
        }
        let kindText = String(rest[..<slash])
        let assetPath = String(rest[rest.index(after: slash)...])
        guard !assetPath.isEmpty else { return respond(.error(400, "badRequest", "no asset path")) }
        let selection: SlotSelection
        do {
            selection = try catalog.withLock { catalog throws(SlotSpecError) in try catalog.resolve(kindText) }
        } catch {
            return respond(.error(400, "badKind", error.description))
        }
        let query = request.query
        var scale = selection.scale ?? selection.kind.scales.first ?? 1
        if let text = query["scale"] {
            guard let value = Int(text), SlotSpec.supportedScales.contains(value) else {
                return respond(.error(400, "badQuery", "scale must be 1 to 4, got '\(text)'"))
            }
            scale = value
        }
        var slot: SlotID?
        switch (query["client"], query["slot"]) {
        case (let client?, let id?) where !client.isEmpty && !id.isEmpty: slot = SlotID(client: client, slot: id)
        case (nil, nil): slot = nil
        default: return respond(.error(400, "badQuery", "client and slot go together"))
        }
        var token: UInt64?
        if let text = query["token"] {
            guard let value = UInt64(text), slot != nil else {
                return respond(.error(400, "badQuery", "token must be a whole number, with client and slot"))
            }
            token = value
        }
        var priority = Priority.visible
        if let text = query["priority"] {
            switch text {
            case "visible": priority = .visible
            case "prefetch": priority = .prefetch
            default: return respond(.error(400, "badQuery", "priority must be visible or prefetch"))
            }
        }
        var wait = maxWaitMilliseconds
        if let text = query["wait"] {
            guard let value = Int(text), value >= 0 else { return respond(.error(400, "badQuery", "wait must be milliseconds >= 0")) }
            wait = min(value, maxWaitMilliseconds)
        }
        let asPath = query["as"] == "path" || (request.headers["accept"]?.contains("application/json") ?? false)
        let ifNoneMatch = request.headers["if-none-match"]

        let once = OnceResponder(respond)
        let pipeline = pipeline
        pipeline.submit(PipelineRequest(assetPath: assetPath, kind: selection.kind, scale: scale, priority: priority,
                                        slot: slot, token: token)) { response in
            once.respond(Self.httpResponse(for: response, asPath: asPath, ifNoneMatch: ifNoneMatch,
                                           storedPath: pipeline.storedFilePath(of:)))
        }
        // The render goes on (and is cached) even when the wait runs out.
        guard !once.isDone else { return }
        let waited = wait
        let timeout: @Sendable () -> HTTPResponse = {
            .error(504, "timeout", "no thumbnail within \(waited) ms; it is still being rendered", headers: [("Retry-After", "1")])
        }
        if wait == 0 {
            once.respond(timeout())
        } else {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(waited)) { if !once.isDone { once.respond(timeout()) } }
        }
    }

    /// `storedPath`: the cache file of a thumbnail if it is on disk now (nil: the cache could not
    /// write it, and `as=path` is answered 503 rather than with a path to nothing).
    static func httpResponse(for response: PipelineResponse, asPath: Bool, ifNoneMatch: String?,
                             storedPath: (CachedThumbnail) -> String? = { $0.storedFilePath }) -> HTTPResponse {
        let tokenHeader: [(String, String)] = response.token.map { [("X-Thumbd-Token", String($0))] } ?? []
        switch response.result {
        case .success(let thumbnail):
            let caching = [("ETag", thumbnail.etag), ("Cache-Control", "public, max-age=31536000, immutable")] + tokenHeader
            if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == thumbnail.etag || $0.trimmingCharacters(in: .whitespaces) == "*"
            }) {
                return HTTPResponse(status: 304, headers: caching)
            }
            if asPath {
                guard let path = storedPath(thumbnail) else {
                    return .error(503, "notStored", "the thumbnail is rendered but the cache could not write its file; "
                                  + "ask again shortly, or without as=path for the bytes", headers: [("Retry-After", "1")] + tokenHeader)
                }
                var object: [String: Any] = ["path": path, "bytes": thumbnail.bytes.count, "width": thumbnail.width,
                                             "height": thumbnail.height, "format": thumbnail.format.rawValue,
                                             "contentType": thumbnail.format.mediaType, "etag": thumbnail.etag]
                if let token = response.token { object["token"] = token }
                return .json(200, object, headers: caching)
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", thumbnail.format.mediaType)] + caching, body: thumbnail.bytes)
        case .failure(let error):
            switch error {
            case .superseded(let current):
                return .error(409, "superseded", error.description, extra: ["currentToken": current],
                              headers: [("X-Thumbd-Token", String(current))])
            case .cancelled: return .error(409, "cancelled", "the slot was released", headers: tokenHeader)
            case .notFound: return .error(404, "notFound", error.description)
            case .forbidden: return .error(403, "forbidden", error.description)
            case .permissionDenied: return .error(403, "permissionDenied", error.description)
            case .assetChanging: return .error(503, "assetChanging", error.description, headers: [("Retry-After", "1")])
            case .undecodable: return .error(415, "undecodable", error.description)
            case .tooLarge: return .error(413, "tooLarge", error.description)
            case .overloaded: return .error(503, "overloaded", "the render queue is full", headers: [("Retry-After", "1")])
            case .shuttingDown: return .error(503, "shuttingDown", "the server is shutting down", headers: [("Retry-After", "5")])
            }
        }
    }
}

/// Passes on the first response only (a render racing its `wait` timeout).
final class OnceResponder: Sendable {
    private let done = Atomic<Bool>(false)
    private let respondOnce: @Sendable (HTTPResponse) -> Void

    init(_ respond: @escaping @Sendable (HTTPResponse) -> Void) {
        respondOnce = respond
    }

    var isDone: Bool { done.load(ordering: .acquiring) }

    func respond(_ response: HTTPResponse) {
        guard done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        respondOnce(response)
    }
}
