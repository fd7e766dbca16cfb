package import ThumbImaging
package import ThumbPipeline

/// A refused request: the HTTP status, a stable error code and a message naming the field and
/// the range. Messages never carry more than a short prefix of what the client sent.
package struct APIError: Error, Equatable, Sendable, CustomStringConvertible {
    package var status: Int
    package var code: String
    package var message: String
    /// The methods the resource takes, for a 405's `Allow` header (RFC 9110 §15.5.6).
    package var allowedMethods: [String] = []

    package init(_ status: Int, _ code: String, _ message: String, allowedMethods: [String] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.allowedMethods = allowedMethods
    }

    static func badRequest(_ message: String) -> APIError { APIError(400, "badRequest", message) }
    static func badQuery(_ message: String) -> APIError { APIError(400, "badQuery", message) }

    package var response: HTTPResponse {
        .error(status, code, message, headers: allowedMethods.isEmpty ? [] : [("Allow", allowedMethods.joined(separator: ", "))])
    }
    package var description: String { "\(status) \(code): \(message)" }
}

/// One API call, parsed and bounded at the door: `ThumbnailAPI.handle` acts on nothing else.
package enum APIRequest: Sendable {
    case thumbnail(ThumbnailCall)
    case releaseSlot(SlotID)
    case prefetch(PrefetchCall)
    case cancelPrefetch(id: String)
    case placeholders(PlaceholdersCall)
    case kinds
    /// `GET`, `PUT` or `DELETE /v1/assets/{path}/focus`.
    case focus(FocusCall)
    case health
    /// `GET /readyz`: 200 once the start-up reconciles are done, 503 until then.
    case ready
    case metrics
    /// `GET /v1/openapi.yaml`: the API's contract (docs/openapi.yaml).
    case openAPI
    /// `GET /v1/cache/stats`.
    case cacheStatistics
    /// `DELETE /v1/cache?asset=|prefix=`.
    case purgeCache(CachePurgeCall)
    /// `GET /v1/assets?prefix=&after=&limit=`.
    case listAssets(AssetListCall)
    /// `POST /v1/signatures`.
    case signatures(SignaturesCall)
    /// `GET /v1/thumbd-cells.js`, `/console` and its files.
    case webFile(WebFile)

    /// Longest prefetch id in `DELETE /v1/prefetch/{id}`, bytes.
    package static let maxPrefetchIDBytes = 256

    /// Turns an HTTP request into an API call, or the refusal to answer. A pure function of its
    /// arguments (no socket, no pipeline, no clock): the HTTP fuzz target drives it directly.
    /// `request.path` and the query are as sent (percent-encoded): they are decoded here, so
    /// that a `%00` is refused instead of cutting a C string short.
    package static func parse(_ request: HTTPRequest, catalog: SlotCatalog, formats: OutputFormatPolicy = OutputFormatPolicy(),
                             maxWaitMilliseconds: Int) -> Result<APIRequest, APIError> {
        parse(request, context: ParsingContext(catalog: catalog, formats: formats), maxWaitMilliseconds: maxWaitMilliseconds)
    }

    /// `parse`, against a context that remembers kinds and format choices across requests (the
    /// server's; the same answers as a fresh one).
    static func parse(_ request: HTTPRequest, context: ParsingContext, maxWaitMilliseconds: Int) -> Result<APIRequest, APIError> {
        do {
            return .success(try parseThrowing(request, context: context, maxWaitMilliseconds: maxWaitMilliseconds))
        } catch {
            return .failure(error)
        }
    }

    static func parseThrowing(_ request: HTTPRequest, context: ParsingContext, maxWaitMilliseconds: Int) throws(APIError) -> APIRequest {
        let catalog = context.catalog
        let route = ThumbnailAPI.route(of: request)
        // HEAD is GET without a body (libmicrohttpd drops the body).
        let method = request.method == "HEAD" ? "GET" : request.method
        // Split only where a route needs the parts (a thumbnail's path is parsed on its own).
        var segments: [Substring] { request.path.split(separator: "/", omittingEmptySubsequences: false) }
        let allowed = ThumbnailAPI.allowedMethods(route: route, path: request.path)
        if route != "other", !allowed.contains(request.method) {
            throw APIError(405, "methodNotAllowed",
                           "\(DisplayText.truncated(request.method, maxBytes: 20)) is not allowed on \(DisplayText.truncated(request.path))",
                           allowedMethods: allowed)
        }
        if let repeated = request.repeatedQueryName {
            throw .badQuery("'\(DisplayText.truncated(repeated, maxBytes: 40))' is given more than once: each parameter is given once")
        }
        switch (method, route) {
        case ("GET", "thumbnails"):
            return .thumbnail(try ThumbnailCall.parse(request, context: context, maxWaitMilliseconds: maxWaitMilliseconds))
        case ("DELETE", "slots"):
            let segments = segments
            guard segments.count == 5, !segments[3].isEmpty, !segments[4].isEmpty else {
                throw .badRequest("expected DELETE /v1/slots/{client}/{slot}")
            }
            return .releaseSlot(try ThumbnailCall.slotID(client: PercentDecoding.decode(segments[3], field: "client"),
                                                         slot: PercentDecoding.decode(segments[4], field: "slot")))
        case ("POST", "prefetch"):
            guard request.path == "/v1/prefetch" else { throw .badRequest("expected POST /v1/prefetch") }
            var call = try PrefetchCall.parse(body: request.body, catalog: catalog)
            call.accept = request.headers["accept"]
            return .prefetch(call)
        case ("DELETE", "prefetch"):
            let segments = segments
            guard segments.count == 4, !segments[3].isEmpty else {
                throw .badRequest("expected DELETE /v1/prefetch/{id} (the id a POST /v1/prefetch answered)")
            }
            let id = try PercentDecoding.decode(segments[3], field: "prefetch id")
            guard id.utf8.count <= maxPrefetchIDBytes else {
                throw .badRequest("a prefetch id is at most \(maxPrefetchIDBytes) bytes, this one \(id.utf8.count)")
            }
            return .cancelPrefetch(id: id)
        case ("GET", "placeholders"):
            return .placeholders(try PlaceholdersCall.parse(query: request.query))
        case ("POST", "placeholders"):
            return .placeholders(try PlaceholdersCall.parse(body: request.body))
        case ("GET", "kinds"): return .kinds
        case ("GET", "assetList"): return .listAssets(try AssetListCall.parse(query: request.query))
        case ("POST", "signatures"): return .signatures(try SignaturesCall.parse(body: request.body))
        case ("GET", "cells"), ("GET", "console"):
            guard let file = WebFile.all[request.path] else {
                throw APIError(404, "notFound", "no route for \(DisplayText.truncated(request.path))")
            }
            return .webFile(file)
        case ("GET", "assets"), ("PUT", "assets"), ("DELETE", "assets"): return .focus(try FocusCall.parse(request, method: method))
        case ("GET", "healthz"): return .health
        case ("GET", "readyz"): return .ready
        case ("GET", "metrics"): return .metrics
        case ("GET", "openapi"): return .openAPI
        case ("GET", "cache"): return .cacheStatistics
        case ("DELETE", "cache"): return .purgeCache(try CachePurgeCall.parse(query: request.query, catalog: catalog))
        case (_, "other"):
            throw APIError(404, "notFound", "no route for \(DisplayText.truncated(request.path))")
        default:
            throw APIError(405, "methodNotAllowed",
                           "\(DisplayText.truncated(request.method, maxBytes: 20)) is not allowed on \(DisplayText.truncated(request.path))",
                           allowedMethods: allowed)
        }
    }
}

/// Percent-decoding of paths and query parts, done by the API rather than the HTTP library.
enum PercentDecoding {
    /// Decodes `%XX` escapes; a `%` not followed by two hex digits stays as it is (as
    /// libmicrohttpd's own decoder did). The result must be UTF-8 without NUL bytes.
    /// `field` names the part in a refusal: made only for one.
    static func decode(_ raw: some StringProtocol, field: @autoclosure () -> String) throws(APIError) -> String {
        // Most paths have no escape: checked on the UTF-8 in place, without a copy.
        let (escapes, nul) = scan(raw.utf8)
        guard escapes else {
            guard !nul else { throw .badRequest("\(field()) contains a NUL byte") }
            return String(raw)
        }
        let utf8 = Array(raw.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
               let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2]) {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        guard !bytes.contains(0) else { throw .badRequest("\(field()) contains a NUL byte (%00)") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .badRequest("\(field()) is not UTF-8 text") }
        return text
    }

    /// Whether `utf8` holds a `%` and whether a NUL, in one pass over its contiguous bytes.
    private static func scan(_ utf8: some Collection<UInt8>) -> (escapes: Bool, nul: Bool) {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (escapes: Bool, nul: Bool) {
            var escapes = false
            var nul = false
            for byte in bytes {
                escapes = escapes || byte == UInt8(ascii: "%")
                nul = nul || byte == 0
            }
            return (escapes, nul)
        }
        if let found = utf8.withContiguousStorageIfAvailable(scan) { return found }
        return (utf8.contains(UInt8(ascii: "%")), utf8.contains(0))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The query with its values decoded; a name holds no escape (so no two spellings of one name
    /// reach here: a name given twice as sent is refused before, `HTTPRequest.repeatedQueryName`).
    static func decode(query: [String: String]) throws(APIError) -> [String: String] {
        var decoded: [String: String] = [:]
        decoded.reserveCapacity(query.count)
        for (rawName, rawValue) in query {
            // A name is sent as it is: a cache in front (nginx keys by `$arg_scale`, which reads
            // the raw name) must see the same parameter the daemon does.
            guard !rawName.utf8.contains(UInt8(ascii: "%")) else {
                throw .badQuery("'\(DisplayText.truncated(rawName, maxBytes: 40))': a parameter name is sent without escapes")
            }
            let name = try decode(rawName, field: "a query parameter name")  // a NUL or bytes that are not UTF-8
            decoded[name] = try decode(rawValue, field: "query parameter '\(DisplayText.truncated(name, maxBytes: 40))'")
        }
        return decoded
    }
}
