import ThumbSystem
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
        // The pipeline is captured only by answers that need it (`as=path`): a hit's answer
        // touches no shared object it need not.
        let storedPath: @Sendable (CachedThumbnail) -> String?
        let placeholder: @Sendable (CachedThumbnail) -> Placeholder?
        if asPath {
            let pipeline = pipeline
            storedPath = { thumbnail in pipeline.storedFilePath(of: thumbnail) }
            placeholder = { thumbnail in pipeline.placeholders.placeholder(of: thumbnail) }
        } else {
            storedPath = { _ in nil }
            placeholder = { _ in nil }
        }
        let owner = call.owner
        pipeline.submit(call.pipelineRequest) { [self] response in
            let answer = Self.httpResponse(for: response, asPath: asPath, ifNoneMatch: ifNoneMatch, variesWithAccept: variesWithAccept,
                                           storedPath: storedPath, placeholder: placeholder)
            if case .failure(.fairShare(let seconds, let reason)) = response.result {
                noteShareRefusal(owner: owner ?? "?", reason: reason)
                once.respond(answer, afterMilliseconds: Self.sharePauseMilliseconds(retryAfterSeconds: seconds))
            } else {
                once.respond(answer)
            }
        }
        // The render goes on (and is cached) even when the wait runs out.
        guard !once.isDone else { return }
        let waited = wait
        let (pipeline, assetPath) = (pipeline, call.pipelineRequest.assetPath)
        let timeout: @Sendable () -> HTTPResponse = {
            Self.unfinishedResponse(waitMilliseconds: waited, placeholder: pipeline.placeholders.known(assetPath: assetPath))
        }
        if wait == 0 {
            once.respond(timeout())
        } else {
            DeadlineTimers.shared.schedule(afterSeconds: Double(waited) / 1000) { if !once.isDone { once.respond(timeout()) } }
        }
    }

    /// A 429 over the caller's share is sent after a pause of its Retry-After, at most a second:
    /// a client that ignores Retry-After is paced by the daemon instead of spinning on refusals,
    /// which would take the CPU that the other callers' renders need. The pause holds only a
    /// suspended connection (each peer's connections are capped), no thread.
    static func sharePauseMilliseconds(retryAfterSeconds: Int?) -> Int {
        min(1000, max(0, retryAfterSeconds ?? 1) * 1000)
    }

    /// `storedPath`: the cache file of a thumbnail if it is on disk now (nil: the cache could not
    /// write it, and `as=path` is answered 503 rather than with a path to nothing).
    /// `variesWithAccept`: the format was chosen by `Accept`, so shared caches must key on it.
    static func httpResponse(for response: PipelineResponse, asPath: Bool, ifNoneMatch: String?, variesWithAccept: Bool = false,
                             storedPath: (CachedThumbnail) -> String? = { $0.storedFilePath },
                             placeholder: (CachedThumbnail) -> Placeholder? = { _ in nil }) -> HTTPResponse {
        let tokenHeader: [(String, String)] = response.token.map { [("X-Thumbd-Token", String($0))] } ?? []
        switch response.result {
        case .success(let thumbnail):
            // Header lines formatted once per cache entry, with its prepared response.
            let served = ServedThumbnail.of(thumbnail)
            if asPath {
                guard let path = storedPath(thumbnail) else {
                    return .failure(.notStored, headers: tokenHeader)
                }
                var object: [String: Any] = ["path": path, "bytes": thumbnail.bytes.count, "width": thumbnail.width,
                                             "height": thumbnail.height, "format": thumbnail.format.rawValue,
                                             "contentType": thumbnail.format.mediaType, "etag": served.etag]
                if let token = response.token { object["token"] = token }
                if let known = placeholder(thumbnail) { object["placeholder"] = placeholderObject(known) }
                object["crop"] = Self.cropObject(thumbnail.crop)
                return jsonAnswer(object, ifNoneMatch: ifNoneMatch, headers: tokenHeader)
            }
            let lines = variesWithAccept ? served.headersVaryingWithAccept : served.headers
            if let ifNoneMatch, Self.matches(ifNoneMatch, etag: served.etag) {
                // The 304 keeps the validators and caching lines, without Content-Type.
                return HTTPResponse(status: 304, headers: lines.filter { $0.0 != "Content-Type" } + tokenHeader)
            }
            guard tokenHeader.isEmpty else { return HTTPResponse(status: 200, headers: lines + tokenHeader, body: thumbnail.bytes) }
            // The same answer for every hit on this entry: the transport may send it prepared.
            var answer = HTTPResponse(status: 200, headers: lines, body: thumbnail.bytes)
            answer.reusable = (served, variesWithAccept)
            return answer
        case .failure(let error):
            switch error {
            case .superseded(let current), .tokenTooFar(let current):
                return .failure(error, extra: ["currentToken": current], headers: [("X-Thumbd-Token", String(current))])
            case .cancelled:
                return .failure(error, message: "the slot was released", headers: tokenHeader)
            default:
                return .failure(error)
            }
        }
    }

    /// The JSON form of a thumbnail (`as=path`, `Accept: application/json`) is another
    /// representation than the image: an ETag of its own bytes (it carries the path, the token
    /// and the placeholder, which the image's ETag does not vouch for), `Vary: Accept` (the same
    /// URL answers the image to another `Accept`), and revalidated rather than `immutable` (the
    /// file it names may be evicted).
    static func jsonAnswer(_ object: [String: Any], ifNoneMatch: String?, headers: [(String, String)]) -> HTTPResponse {
        var answer = HTTPResponse.json(200, object)
        let etag = "\"json-" + String(ContentHash.fnv1a64(answer.body), radix: 16) + "\""
        let lines = [("ETag", etag), ("Cache-Control", "no-cache"), ("Vary", "Accept, Origin")] + headers
        if let ifNoneMatch, matches(ifNoneMatch, etag: etag) { return HTTPResponse(status: 304, headers: lines) }
        answer.headers += lines
        return answer
    }

    /// Whether an `If-None-Match` list names `etag`; spaces and tabs around each member (HTTP's
    /// optional white space) do not count. `*` matches no thumbnail: it would answer 304 ("what
    /// you hold is current") to a client or cache that holds nothing, for a thumbnail this very
    /// request may have rendered; caches revalidate with the ETags they hold.
    static func matches(_ ifNoneMatch: String, etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { member in
            var text = member
            while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
            while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
            return text.utf8.elementsEqual(etag.utf8)
        }
    }
}

/// A 64-bit FNV-1a of bytes: an ETag for a small generated answer (not a security hash).
enum ContentHash {
    static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
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

    /// Takes the answer now (no later one replaces it: not the wait's 504) and sends it after a pause.
    func respond(_ response: HTTPResponse, afterMilliseconds pause: Int) {
        guard pause > 0 else { return respond(response) }
        guard done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let send = respondOnce
        DeadlineTimers.shared.schedule(afterSeconds: Double(pause) / 1000) { send(response) }
    }
}
