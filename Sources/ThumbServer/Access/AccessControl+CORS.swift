import ThumbImaging
/// CORS for the origins `access.allowedOrigins` lists (after `screen`, every Origin that gets
/// this far is allowed: listed, or the page's own).
extension AccessControl {
    /// Headers a page's script may read, besides the CORS-safelisted ones.
    static let exposedHeaders = "ETag, Retry-After, X-Thumbd-Token, X-Thumbd-Placeholder"
    /// Request headers a page may send.
    static let allowedRequestHeaders = "Authorization, Content-Type, If-None-Match"
    static let preflightMaxAgeSeconds = 600

    /// `Access-Control-Allow-Origin` and friends for a request with an allowed `Origin`. The
    /// `Vary: Origin` that goes with them is on every answer, with or without an `Origin`
    /// (`HTTPResponse.varyingWithOrigin`): a cache that stored a plain `<img>`'s answer must not
    /// hand it to a page's `fetch`, which needs these headers.
    package func corsHeaders(for request: HTTPRequest) -> [(String, String)] {
        guard let origin = request.headers["origin"] else { return [] }
        return [("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", Self.exposedHeaders)]
    }

    /// The answer to a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method):
    /// 204 naming the route's methods and the headers a page may send, or 405 when the method
    /// asked for is not the route's. nil for anything that is not a preflight (an OPTIONS
    /// without those headers is refused like any method the route does not take).
    package func preflight(_ request: HTTPRequest, allowedMethods: [String]) -> HTTPResponse? {
        guard request.method == "OPTIONS", request.headers["origin"] != nil,
              let asked = request.headers["access-control-request-method"] else { return nil }
        guard allowedMethods.contains(asked) else {
            return .error(405, "methodNotAllowed", "\(DisplayText.truncated(asked, maxBytes: 20)) is not allowed on this route",
                          headers: [("Allow", allowedMethods.joined(separator: ", "))])
        }
        return HTTPResponse(status: 204, headers: [("Access-Control-Allow-Methods", allowedMethods.joined(separator: ", ")),
                                                    ("Access-Control-Allow-Headers", Self.allowedRequestHeaders),
                                                    ("Access-Control-Max-Age", String(Self.preflightMaxAgeSeconds))])
    }
}
