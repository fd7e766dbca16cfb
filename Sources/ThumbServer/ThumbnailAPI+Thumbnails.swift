import Dispatch
import Synchronization
import ThumbImaging
import ThumbPipeline

extension ThumbnailAPI {
    /// GET /v1/thumbnails/{kind}/{asset path}, parsed (`ThumbnailCall`): submit, then answer
    /// with the thumbnail or, when `wait` runs out first, 504.
    func thumbnail(_ call: ThumbnailCall, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let asPath = call.answersWithPath
        let ifNoneMatch = call.ifNoneMatch
        let wait = call.waitMilliseconds
        let variesWithAccept = call.variesWithAccept
        let once = OnceResponder(respond)
        let pipeline = pipeline
        pipeline.submit(call.pipelineRequest) { response in
            once.respond(Self.httpResponse(for: response, asPath: asPath, ifNoneMatch: ifNoneMatch, variesWithAccept: variesWithAccept,
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
    /// `variesWithAccept`: the format was chosen by `Accept`, so shared caches must key on it.
    static func httpResponse(for response: PipelineResponse, asPath: Bool, ifNoneMatch: String?, variesWithAccept: Bool = false,
                             storedPath: (CachedThumbnail) -> String? = { $0.storedFilePath }) -> HTTPResponse {
        let tokenHeader: [(String, String)] = response.token.map { [("X-Thumbd-Token", String($0))] } ?? []
        switch response.result {
        case .success(let thumbnail):
            let vary: [(String, String)] = variesWithAccept ? [("Vary", "Accept")] : []
            let caching = [("ETag", thumbnail.etag), ("Cache-Control", "public, max-age=31536000, immutable")] + vary + tokenHeader
            if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == thumbnail.etag || $0.trimmingCharacters(in: .whitespaces) == "*"
            }) {
                return HTTPResponse(status: 304, headers: caching)
            }
            if asPath {
                guard let path = storedPath(thumbnail) else {
                    return .failure(.notStored, headers: tokenHeader)
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
                return .failure(error, extra: ["currentToken": current], headers: [("X-Thumbd-Token", String(current))])
            case .cancelled:
                return .failure(error, message: "the slot was released", headers: tokenHeader)
            default:
                return .failure(error)
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
