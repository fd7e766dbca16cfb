import Foundation
import Testing
import ThumbTestSupport
import ThumbAccess

/// Issue 25, the daemon's side of the web cells: the asset listing, the files it serves to
/// browsers (the cells library, the operator console) and who may have them, URLs signed for
/// `client` callers, and slots for public pages behind a proxy when the config allows them.
@Suite(.serialized) struct ServeCellsTests {
    static let photo = ServePaths.samples + "/landscape-exif6.jpg"
    static let secret = String(repeating: "3c", count: 32)
    static let operatorToken = "console-operator-token"
    static let clientToken = "console-client-token"
    static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    /// Names whose byte order differs from a locale's (capitals first, `é` after `z`, a space).
    static let names = ["B.jpg", "a.jpg", "a/1.jpg", "a/2.jpg", "a b/3.jpg", "ab.jpg", "z.jpg", "é.jpg", "a/sub/4.jpg"]

    func daemon(access: [String: Any] = [:], tcpPort: UInt16? = nil, names: [String] = names) throws -> ServeDaemon {
        var server: [String: Any] = ["socketGroup": "nogroup", "socketMode": "0660"]
        if let tcpPort { server["listen"] = "127.0.0.1:\(tcpPort)" }
        let daemon = try ServeDaemon(config: ServeDaemon.config(server: server, extra: ["access": access]),
                                     assets: Dictionary(uniqueKeysWithValues: names.map { ($0, Self.photo) }))
        chmod(daemon.directory, 0o755)
        try daemon.start()
        try servePoll(timeout: 30, "the start-up reconciles") { try daemon.request("/readyz").status == 200 }
        return daemon
    }

    func asNobody(_ daemon: ServeDaemon, _ path: String, method: String = "GET", body: String? = nil) throws -> ServeResponse {
        try ServeCurl.request(url: "http://thumbd" + path, via: ["--unix-socket", daemon.socket], runAs: Self.asNobody, method: method, body: body)
    }

    func tcp(_ port: UInt16, _ path: String, method: String = "GET", headers: [String] = [], body: String? = nil) throws -> ServeResponse {
        try ServeCurl.request(url: "http://127.0.0.1:\(port)" + path, method: method, headers: headers, body: body, contentType: "application/json")
    }

    /// Every page of the listing, `limit` at a time, through `next`.
    func allPages(_ daemon: ServeDaemon, prefix: String = "", limit: Int) throws -> (paths: [String], pages: Int) {
        var paths: [String] = []
        var after: String?
        var pages = 0
        repeat {
            var query = "limit=\(limit)&prefix=" + (prefix.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            if let after { query += "&after=" + (after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }
            let answer = try daemon.request("/v1/assets?" + query)
            guard answer.status == 200, let assets = answer.json["assets"] as? [[String: Any]] else { throw TestFailure(answer.summary) }
            paths += assets.compactMap { $0["path"] as? String }
            after = answer.json["next"] as? String
            pages += 1
            guard pages < 100 else { throw TestFailure("the listing does not end") }
        } while after != nil
        return (paths, pages)
    }

    static func byteOrder(_ paths: [String]) -> [String] { paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

    @Test("GET /v1/assets pages the folder in byte order from the index, by prefix; follows the watcher; bounded at the door; a client may, public may not")
    func listing() throws {
        let port = try ServeEndpoint.freePort()
        let daemon = try daemon(tcpPort: port)
        defer { _ = daemon.stop() }
        let whole = try allPages(daemon, limit: 2)
        #expect(whole.paths == Self.byteOrder(Self.names), "\(whole.paths)")
        #expect(whole.pages == 5, "9 paths, 2 a page: 5 pages, the last not full")
        #expect(try allPages(daemon, limit: 1000).paths == whole.paths)
        #expect(try allPages(daemon, prefix: "a/", limit: 1).paths == ["a/1.jpg", "a/2.jpg", "a/sub/4.jpg"])
        #expect(try allPages(daemon, prefix: "a", limit: 3).paths == ["a b/3.jpg", "a.jpg", "a/1.jpg", "a/2.jpg", "a/sub/4.jpg", "ab.jpg"])
        #expect(try allPages(daemon, prefix: "nothing", limit: 5).paths.isEmpty)
        // A placeholder once a decode of the asset has computed one.
        #expect(try daemon.request("/v1/thumbnails/large/z.jpg").status == 200)
        try servePoll(timeout: 20, "z.jpg's placeholder in the listing") {
            let page = try daemon.request("/v1/assets?prefix=z").json["assets"] as? [[String: Any]]
            return (page?.first?["placeholder"] as? [String: Any])?["thumbhash"] is String
        }
        // The watcher: a new file is listed, a removed one and a removed folder's are not.
        try FileManager.default.copyItem(atPath: Self.photo, toPath: daemon.assets + "/new.jpg")
        try FileManager.default.removeItem(atPath: daemon.assets + "/B.jpg")
        try FileManager.default.removeItem(atPath: daemon.assets + "/a")
        let expected = Self.byteOrder(Self.names.filter { $0 != "B.jpg" && !$0.hasPrefix("a/") } + ["new.jpg"])
        try servePoll(timeout: 20, "the listing to follow the folder") { try allPages(daemon, limit: 4).paths == expected }
        // Bounded at the door, each refusal naming the field.
        for (query, field) in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=99999999999999999999", "limit"), ("limit=-1", "limit"),
                               ("limit=1e3", "limit"), ("color=red", "color"), ("prefix=%00", "prefix"),
                               ("after=" + String(repeating: "x", count: 4097), "after")] {
            let answer = try daemon.request("/v1/assets?" + query)
            #expect(answer.status == 400 && ["badQuery", "badRequest"].contains(answer.errorCode ?? ""), "\(query): \(answer.summary)")
            #expect(answer.text.contains(field), "\(query) names \(field): \(answer.text)")
        }
        #expect(try daemon.request("/v1/assets", method: "POST", body: "{}").status == 405)
        #expect(try asNobody(daemon, "/v1/assets?limit=1").status == 200, "a client may list")
        let anonymous = try tcp(port, "/v1/assets")
        #expect(anonymous.status == 403 && anonymous.text.contains("client role"), "\(anonymous.summary)")
    }

    @Test("the cells library is served to anyone with its ETag (304 on If-None-Match); the console to operators only: 401 Basic for anonymous TCP, 403 for a client, the token as a Basic password opens it for the browser's own requests only")
    func webFiles() throws {
        let port = try ServeEndpoint.freePort()
        let token = Digest.hex(Digest.sha256(Array(Self.operatorToken.utf8)))
        let clientToken = Digest.hex(Digest.sha256(Array(Self.clientToken.utf8)))
        let daemon = try daemon(access: ["tokens": [["name": "ops", "role": "operator", "sha256": token],
                                                    ["name": "app", "role": "client", "sha256": clientToken]]], tcpPort: port, names: ["a.jpg"])
        defer { _ = daemon.stop() }
        let library = try tcp(port, "/v1/thumbd-cells.js")
        #expect(library.status == 200 && library.headers["content-type"]?.hasPrefix("text/javascript") == true, "\(library.summary)")
        #expect(library.text.contains("export class ThumbdCells") && library.text.contains("export function thumbHashToRGBA"))
        let source = try String(contentsOfFile: ServePaths.packageRoot + "/Sources/ThumbServer/Web/thumbd-cells.js", encoding: .utf8)
        #expect(library.text == source, "the served library is the repository's file")
        let etag = try #require(library.headers["etag"])
        #expect(library.headers["cache-control"] == "no-cache", "revalidated at each use: never a library of another version")
        let revalidated = try tcp(port, "/v1/thumbd-cells.js", headers: ["If-None-Match: \(etag)"])
        #expect(revalidated.status == 304 && revalidated.body.isEmpty && revalidated.headers["etag"] == etag, "\(revalidated.summary)")
        #expect(try tcp(port, "/v1/thumbd-cells.js", headers: ["If-None-Match: \"other\""]).status == 200)

        let anonymous = try tcp(port, "/console")
        #expect(anonymous.status == 401 && anonymous.headers["www-authenticate"]?.hasPrefix("Basic") == true, "\(anonymous.summary)")
        let basic = "Authorization: Basic " + Data("operator:\(Self.operatorToken)".utf8).base64EncodedString()
        // A browser's own requests (it sets Sec-Fetch-Site; pages cannot).
        let sameOrigin = "Sec-Fetch-Site: same-origin"
        for file in ["/console", "/console/console.js", "/console/console-charts.js", "/console/console.css"] {
            let answer = try tcp(port, file, headers: [basic, sameOrigin])
            #expect(answer.status == 200 && !answer.body.isEmpty, "\(file): \(answer.summary)")
            #expect(answer.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true, "\(file)")
            #expect(answer.headers["x-frame-options"] == "DENY")
        }
        #expect(try tcp(port, "/console", headers: [basic, "Sec-Fetch-Site: none"]).headers["content-type"] == "text/html; charset=utf-8")
        #expect(try tcp(port, "/console/missing.js", headers: [basic, sameOrigin]).status == 404)
        #expect(try tcp(port, "/metrics", headers: [basic, sameOrigin]).status == 200, "the console's own requests are the operator's")
        // Another site's page makes the browser send the kept credentials too (an <img>): they
        // speak for nobody there, and without a Sec-Fetch-Site (not a browser) neither.
        for site in ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Site: same-site", nil] {
            let headers = [basic] + (site.map { [$0] } ?? [])
            let metrics = try tcp(port, "/metrics", headers: headers)
            #expect(metrics.status == 403 && metrics.text.contains("public"), "\(site ?? "no Sec-Fetch-Site"): \(metrics.summary)")
            #expect(try tcp(port, "/v1/thumbnails/40x40,fill/a.jpg", headers: headers).status == 403, "an inline spec, unsigned: public")
        }
        // A wrong password, or a token without the role, asks the browser to sign in again.
        let wrong = "Authorization: Basic " + Data("operator:guess".utf8).base64EncodedString()
        let clientLogin = "Authorization: Basic " + Data("app:\(Self.clientToken)".utf8).base64EncodedString()
        for login in [wrong, clientLogin, "Authorization: Basic !!!"] {
            let answer = try tcp(port, "/console", headers: [login, sameOrigin])
            #expect(answer.status == 401 && answer.headers["www-authenticate"]?.hasPrefix("Basic realm=") == true, "\(login): \(answer.summary)")
        }
        let client = try asNobody(daemon, "/console")
        #expect(client.status == 403 && client.text.contains("operator role"), "\(client.summary)")
        #expect(try daemon.request("/console").status == 200, "root on the socket is an operator")
    }

    @Test("POST /v1/signatures signs for client callers: the URLs it gives are served to public callers and tampering is refused; 409 without keys; public may not sign")
    func signaturesForClients() throws {
        let port = try ServeEndpoint.freePort()
        let daemon = try daemon(access: ["signingKeys": [["id": "site", "secret": Self.secret]], "signatures": ["tcp": "required", "socket": "off"]],
                                tcpPort: port, names: ["photos/a b.jpg"])
        defer { _ = daemon.stop() }
        let body = #"{"urls": [{"kind": "large", "asset": "photos/a b.jpg", "scale": 2}, {"kind": "40x30,fill", "asset": "photos/a b.jpg"}], "expiresIn": 600}"#
        let answer = try asNobody(daemon, "/v1/signatures", method: "POST", body: body)
        #expect(answer.status == 200, "\(answer.summary)")
        let urls = try #require(answer.json["urls"] as? [String])
        #expect(urls.count == 2 && answer.json["key"] as? String == "site")
        let expires = try #require(answer.json["expires"] as? Int)
        #expect(abs(expires - Int(Date().timeIntervalSince1970) - 600) < 30)
        for url in urls {
            let served = try tcp(port, url)
            #expect(served.status == 200, "\(url): \(served.summary)")
        }
        let tampered = try tcp(port, urls[0].replacingOccurrences(of: "scale=2", with: "scale=3"))
        #expect(tampered.status == 403 && tampered.errorCode == "badSignature", "\(tampered.summary)")
        let anonymous = try tcp(port, "/v1/signatures", method: "POST", body: body)
        #expect(anonymous.status == 403 && anonymous.text.contains("client role"), "\(anonymous.summary)")
        for (bad, what) in [(#"{"urls": []}"#, "urls"), (#"{"urls": [{"kind": "large"}]}"#, "asset"),
                            (#"{"urls": [{"kind": "a\nb", "asset": "x.jpg"}]}"#, "line break"),
                            (#"{"urls": [{"kind": "large", "asset": "x.jpg", "scale": 5}]}"#, "scale"),
                            (#"{"urls": [{"kind": "large", "asset": "x.jpg"}], "expiresIn": 1e300}"#, "expiresIn"),
                            (#"{"urls": [{"kind": "large", "asset": "x.jpg"}], "key": "other"}"#, "other")] {
            let refused = try daemon.request("/v1/signatures", method: "POST", body: bad)
            #expect(refused.status == 400 && refused.text.contains(what), "\(bad): \(refused.summary)")
        }
        let keyless = try self.daemon(names: ["a.jpg"])
        defer { _ = keyless.stop() }
        let none = try keyless.request("/v1/signatures", method: "POST", body: #"{"urls": [{"kind": "large", "asset": "a.jpg"}]}"#)
        #expect(none.status == 409 && none.errorCode == "noSigningKeys", "\(none.summary)")
    }

    @Test("a thumbnail URL's parameters are the known names, sent as they are: another name or an escaped one is 400 (a cache in front keys by the raw names)")
    func parameterNames() throws {
        let daemon = try daemon(names: ["a.jpg"])
        defer { _ = daemon.stop() }
        #expect(try daemon.request("/v1/thumbnails/large/a.jpg?scale=2&format=png&wait=5000&priority=visible").status == 200)
        for query in ["SCALE=2", "sc%61le=2", "scale=2&v=7", "%73cale=1"] {
            let answer = try daemon.request("/v1/thumbnails/large/a.jpg?" + query)
            #expect(answer.status == 400 && answer.errorCode == "badQuery", "\(query): \(answer.summary)")
        }
    }

    @Test("access.publicSlots lets public callers (a proxy's pages) name and release slots on signed URLs; without it they are the client role's")
    func publicSlots() throws {
        for allowed in [false, true] {
            let port = try ServeEndpoint.freePort()
            let daemon = try daemon(access: ["signingKeys": [["id": "site", "secret": Self.secret]], "publicSlots": allowed],
                                    tcpPort: port, names: ["p.jpg"])
            defer { _ = daemon.stop() }
            let signed = try #require(try daemon.request("/v1/signatures", method: "POST",
                                                         body: #"{"urls": [{"kind": "large", "asset": "p.jpg"}]}"#).json["urls"] as? [String]).first ?? ""
            let first = try tcp(port, signed + "&client=page-1&slot=c1&token=5")
            let late = try tcp(port, signed + "&client=page-1&slot=c1&token=4")
            let release = try tcp(port, "/v1/slots/page-1/c1", method: "DELETE")
            if allowed {
                #expect(first.status == 200 && first.headers["x-thumbd-token"] == "5", "\(first.summary)")
                #expect(late.status == 409 && late.errorCode == "superseded", "\(late.summary)")
                #expect(release.status == 204, "\(release.summary)")
            } else {
                #expect(first.status == 403 && first.text.contains("client role"), "\(first.summary)")
                #expect(release.status == 403, "\(release.summary)")
            }
        }
    }
}
