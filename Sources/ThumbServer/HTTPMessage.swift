import Foundation
package import ThumbPipeline

/// A request as the transport hands it to the API: the path and query as sent, the headers the
/// API reads (`HTTPServer.forwardedHeaderNames`) under lower-cased names. `APIRequest.parse`
/// decodes and bounds everything.
package struct HTTPRequest: Sendable {
    package var method: String
    /// URL path as sent, still percent-encoded: the HTTP library passes escapes through
    /// (`CThumb_HTTPStart`), so that a `%00` reaches the API instead of cutting the C string.
    package var path: String
    /// Query parameters as sent: `+` already a space, `%XX` escapes still in names and values.
    package var query: [String: String]
    package var headers: [String: String]
    /// A query parameter name the request gave more than once (the first such, as sent). Refused
    /// on every route: the daemon would read one value and a cache in front another (nginx's
    /// `$arg_scale` is the first, a dictionary keeps the last), so one URL could be stored under
    /// another's key.
    package var repeatedQueryName: String?
    package var body: [UInt8]
    /// Who asks (the transport sets it; a request made in the process is `inProcess`).
    package var caller = HTTPCaller.inProcess

    package init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

package struct HTTPResponse: Sendable {
    // A change to any of these makes the answer another one than the prepared response says.
    package var status: Int { didSet { reusable = nil } }
    package var headers: [(String, String)] { didSet { reusable = nil } }
    package var body: [UInt8] { didSet { reusable = nil } }
    /// The same answer as a libmicrohttpd response the transport may queue as it is (a cache hit
    /// answered the same way every time: `ServedThumbnail`), instead of building one from the
    /// fields above, which say the same.
    var reusable: (served: ServedThumbnail, variesWithAccept: Bool)?

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `{"error": code, "message": text}` plus any extra fields.
    package static func error(_ status: Int, _ code: String, _ message: String, extra: [String: Any] = [:],
                             headers: [(String, String)] = []) -> HTTPResponse {
        var object: [String: Any] = ["error": code, "message": message]
        for (key, value) in extra { object[key] = value }
        return json(status, object, headers: headers)
    }

    package static func json(_ status: Int, _ object: Any, headers: [(String, String)] = []) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(data) + [0x0A])
    }

    package static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }
}

extension HTTPResponse {
    /// A failure's answer: status, code and `Retry-After` from `ThumbFailure.disposition`, the one table.
    package static func failure(_ failure: ThumbFailure, message: String? = nil, extra: [String: Any] = [:],
                               headers: [(String, String)] = []) -> HTTPResponse {
        let disposition = failure.disposition
        let retry = disposition.retryAfterSeconds.map { [("Retry-After", String($0))] } ?? []
        return .error(disposition.httpStatus, disposition.code, message ?? failure.description, extra: extra, headers: retry + headers)
    }
}

extension HTTPResponse {
    /// This answer with `Origin` named in its one `Vary` header (added to the names it holds, or a
    /// new header). A prepared hit already names it (`ServedThumbnail`) and stays prepared.
    package var varyingWithOrigin: HTTPResponse {
        guard reusable == nil else { return self }
        guard let index = headers.firstIndex(where: { $0.0.utf8.count == 4 && $0.0.lowercased() == "vary" }) else {
            var answer = self
            answer.headers.append(("Vary", "Origin"))
            return answer
        }
        let names = headers[index].1.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !names.contains(where: { $0.lowercased() == "origin" || $0 == "*" }) else { return self }
        var answer = self
        answer.headers[index].1 = (names + ["Origin"]).joined(separator: ", ")
        return answer
    }
}
