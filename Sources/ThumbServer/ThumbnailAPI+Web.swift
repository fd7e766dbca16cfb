import ThumbAccess

/// The files the daemon serves to browsers, built into the binary (SwiftPM `embedInCode`, like
/// the contract): the cells library at `/v1/thumbd-cells.js` (anyone: it is code, no data) and
/// the operator console under `/console` (operators only). Each answer is prepared once, with a
/// strong ETag of its bytes, so a browser revalidates with one 304.
package struct WebFile: Sendable {
    package let path: String
    let contentType: String
    let bytes: [UInt8]
    let etag: String
    let headers: [(String, String)]

    init(path: String, contentType: String, bytes: [UInt8], cacheControl: String, extraHeaders: [(String, String)] = []) {
        self.path = path
        self.contentType = contentType
        self.bytes = bytes
        etag = "\"" + Digest.hex(Array(Digest.sha256(bytes).prefix(12))) + "\""
        headers = [("Content-Type", contentType), ("ETag", etag), ("Cache-Control", cacheControl),
                   ("X-Content-Type-Options", "nosniff")] + extraHeaders
    }

    /// The library's fixed path: pages import it from here.
    static let cellsPath = "/v1/thumbd-cells.js"
    static let consolePrefix = "/console"

    /// The console's pages may load only the daemon's own files and show its images (thumbnails
    /// arrive as blob: URLs, placeholders as data: URLs), and no other site may frame it: a
    /// framed console would let a page trick an operator's click into a focus write.
    static let consoleHeaders = [("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; "
                                     + "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
                                 ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer")]

    static let all: [String: WebFile] = {
        let javascript = "text/javascript; charset=utf-8"
        // Every file is revalidated at each use (a 304 by its ETag): the path is fixed, and a page
        // or console script of one version must never run against the library of another (a
        // missing export is a module link error). The console's are never stored by shared caches.
        let files = [
            WebFile(path: cellsPath, contentType: javascript, bytes: PackageResources.thumbd_cells_js,
                    cacheControl: "no-cache"),
            WebFile(path: consolePrefix, contentType: "text/html; charset=utf-8", bytes: PackageResources.console_html,
                    cacheControl: "private, no-cache", extraHeaders: consoleHeaders),
            WebFile(path: consolePrefix + "/console.js", contentType: javascript, bytes: PackageResources.console_js,
                    cacheControl: "private, no-cache", extraHeaders: consoleHeaders),
            WebFile(path: consolePrefix + "/console-charts.js", contentType: javascript, bytes: PackageResources.console_charts_js,
                    cacheControl: "private, no-cache", extraHeaders: consoleHeaders),
            WebFile(path: consolePrefix + "/console.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css,
                    cacheControl: "private, no-cache", extraHeaders: consoleHeaders),
        ]
        return Dictionary(uniqueKeysWithValues: files.map { ($0.path, $0) })
    }()

    /// 200 with the bytes (libmicrohttpd leaves them out for HEAD), or 304 when `If-None-Match`
    /// names this version.
    func response(ifNoneMatch: String?) -> HTTPResponse {
        if let ifNoneMatch, ifNoneMatch.split(separator: ",").contains(where: { $0.trimmingWhitespace() == etag || $0.trimmingWhitespace() == "*" }) {
            return HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" })
        }
        return HTTPResponse(status: 200, headers: headers, body: bytes)
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
