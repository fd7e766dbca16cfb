import Foundation
import Testing
import ThumbTestSupport
import ThumbAccess

/// Issue 23: who may do what. Findings 1 to 3 as a hostile caller would try them, and the access
/// model that answers them: roles from the socket peer's uid and groups or a bearer token,
/// signed URLs with key rotation and expiry, a TCP listener no web page can drive.
@Suite(.serialized) struct ServeAccessTests {
    static let photo = ServePaths.samples + "/landscape-exif6.jpg"
    /// Two signing keys: `k1` being retired, `k2` its successor (both valid during a rotation).
    static let key1 = String(repeating: "11", count: 32)
    static let key2 = String(repeating: "2f", count: 32)
    static let operatorToken = "op-secret-token-for-tests"

    /// `nobody:nogroup` through setpriv, so that the socket peer is another uid than the daemon's.
    static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

    func daemon(access: [String: Any], tcpPort: UInt16? = nil) throws -> ServeDaemon {
        var server: [String: Any] = ["socketGroup": "nogroup", "socketMode": "0660"]
        if let tcpPort { server["listen"] = "127.0.0.1:\(tcpPort)" }
        let daemon = try ServeDaemon(config: ServeDaemon.config(server: server, extra: ["access": access]),
                                     assets: ["photos/a b.jpg": Self.photo, "photos/plain.jpg": Self.photo])
        // nobody must reach the socket: the folder is the test's own (mode 0700 by default).
        chmod(daemon.directory, 0o755)
        try daemon.start()
        return daemon
    }

    func socketRequest(_ daemon: ServeDaemon, _ path: String, asNobody: Bool, method: String = "GET", body: String? = nil) throws -> ServeResponse {
        try ServeCurl.request(url: "http://thumbd" + path, via: ["--unix-socket", daemon.socket], runAs: asNobody ? Self.asNobody : [],
                              method: method, body: body)
    }

    @Test("finding 3: a non-operator uid on the socket (nobody, in the socket's group) is a client: purge, focus writes, statistics and metrics are 403 naming the role; root gets 200")
    func socketRolesFollowTheUid() throws {
        let daemon = try daemon(access: [:])
        defer { _ = daemon.stop() }
        let thumbnail = try socketRequest(daemon, "/v1/thumbnails/large/photos/plain.jpg", asNobody: true)
        #expect(thumbnail.status == 200, "\(thumbnail.summary)")
        let inline = try socketRequest(daemon, "/v1/thumbnails/64x64,fill/photos/plain.jpg", asNobody: true)
        #expect(inline.status == 200, "a client may ask for inline specs: \(inline.summary)")
        let refused: [(String, String, String?)] = [
            ("/v1/cache?prefix=photos/", "DELETE", nil), ("/v1/cache?kind=large", "DELETE", nil), ("/v1/cache/stats", "GET", nil),
            ("/metrics", "GET", nil), ("/v1/assets/photos/plain.jpg/focus", "PUT", #"{"x":0.5,"y":0.5}"#),
            ("/v1/assets/photos/plain.jpg/focus", "DELETE", nil),
        ]
        for (path, method, body) in refused {
            let answer = try socketRequest(daemon, path, asNobody: true, method: method, body: body)
            #expect(answer.status == 403 && answer.errorCode == "forbidden", "\(method) \(path) as nobody: \(answer.summary)")
            #expect(answer.text.contains("operator role") && answer.text.contains("client"), "names the role needed and held: \(answer.text)")
        }
        let focus = try socketRequest(daemon, "/v1/assets/photos/plain.jpg/focus", asNobody: true)
        #expect(focus.status == 404 && focus.errorCode == "noFocus", "a client may read focus points: \(focus.summary)")
        // As root (the daemon's own uid here): the operator.
        #expect(try daemon.request("/v1/cache/stats").status == 200)
        #expect(try daemon.request("/v1/assets/photos/plain.jpg/focus", method: "PUT", body: #"{"x":0.25,"y":0.5}"#).status == 200)
        let purge = try daemon.request("/v1/cache?prefix=photos/", method: "DELETE")
        #expect(purge.status == 200, "\(purge.summary)")
        // Every refusal counted by route and reason; logged once (a minute) for the principal.
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_access_refusals_total{route=\"cache\",reason=\"role\"}"] == 3, "\(metrics.text)")
        #expect(metrics["thumbd_access_refusals_total{route=\"metrics\",reason=\"role\"}"] == 1)
        #expect(metrics["thumbd_access_refusals_total{route=\"assets\",reason=\"role\"}"] == 2)
        let log = try String(contentsOfFile: daemon.logPath, encoding: .utf8)
        #expect(log.components(separatedBy: "refused uid:65534").count == 2, "one log line for six refusals of one caller:\n\(log)")
    }

    @Test("finding 2: slots belong to their principal: another uid's claim neither pins nor releases them, tokens move by at most 2^16")
    func slotsBelongToTheirPrincipal() throws {
        let daemon = try daemon(access: [:])
        defer { _ = daemon.stop() }
        let cell = "/v1/thumbnails/large/photos/plain.jpg?client=app&slot=cell-7"
        // The attacker (nobody) names the owner's client and slot with a huge token...
        let pin = try socketRequest(daemon, cell + "&token=9007199254740991", asNobody: true)
        #expect(pin.status == 409 && pin.errorCode == "tokenTooFar", "\(pin.summary)")
        let claim = try socketRequest(daemon, cell + "&token=60000", asNobody: true)
        #expect(claim.status == 200, "\(claim.summary)")
        // ...and the owner (root) is not late: its slot is another one.
        let owner = try daemon.request(cell + "&token=1")
        #expect(owner.status == 200 && owner.headers["x-thumbd-token"] == "1", "\(owner.summary)")
        // A release by the attacker releases its own slot, not the owner's.
        #expect(try socketRequest(daemon, "/v1/slots/app/cell-7", asNobody: true, method: "DELETE").status == 204)
        let after = try daemon.request(cell + "&token=2")
        #expect(after.status == 200 && after.headers["x-thumbd-token"] == "2", "\(after.summary)")
        let late = try daemon.request(cell + "&token=1")
        #expect(late.status == 409 && late.errorCode == "superseded", "the owner's own rule still holds: \(late.summary)")
    }

    /// A daemon on TCP with signatures required, two keys, a bearer token for operators.
    func signingDaemon(port: UInt16) throws -> ServeDaemon {
        let token = Digest.hex(Digest.sha256(Array(Self.operatorToken.utf8)))
        return try daemon(access: [
            "signingKeys": [["id": "k1", "secret": Self.key1], ["id": "k2", "secret": Self.key2]],
            "signatures": ["tcp": "required", "socket": "off"],
            "tokens": [["name": "ops", "role": "operator", "sha256": token]],
            "allowedOrigins": ["https://app.example"],
        ], tcpPort: port)
    }

    func tcp(_ port: UInt16, _ path: String, method: String = "GET", headers: [String] = [], body: String? = nil,
             contentType: String? = "application/json") throws -> ServeResponse {
        try ServeCurl.request(url: "http://127.0.0.1:\(port)" + path, method: method, headers: headers, body: body, contentType: contentType)
    }

    /// A URL signed by docs/access.md's signer in `language` (docs/signers).
    func signed(_ language: String, key: String, secret: String, kind: String, asset: String, scale: String = "",
                format: String = "", expires: String = "") throws -> String {
        let script = ServePaths.packageRoot + "/docs/signers/" + (language == "python" ? "sign.py" : "sign.mjs")
        let program = language == "python" ? "/usr/bin/python3" : "/usr/bin/node"
        return try Self.output(of: [program, script, key, secret, kind, asset, scale, format, expires])
    }

    /// What a command printed, trimmed; a failure names its stderr.
    static func output(of argv: [String]) throws -> String {
        let result = try ChildProcess.run(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment, timeout: 30)
        guard result.exitCode == 0 else { throw TestFailure("\(argv[1]) failed: \(result.summary)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("signed URLs on TCP: unsigned, tampered, expired and unknown-key 403; both keys of a rotation, the Python and Node signers and thumbd sign accepted")
    func signaturesOnTCP() throws {
        let port = try ServeEndpoint.freePort()
        let daemon = try signingDaemon(port: port)
        defer { _ = daemon.stop() }
        let unsigned = try tcp(port, "/v1/thumbnails/large/photos/plain.jpg")
        #expect(unsigned.status == 403 && unsigned.errorCode == "signatureRequired", "\(unsigned.summary)")
        let future = String(Int(Date().timeIntervalSince1970) + 3600)
        for language in ["python", "node"] {
            let url = try signed(language, key: "k1", secret: Self.key1, kind: "large", asset: "photos/a b.jpg", scale: "2", expires: future)
            let answer = try tcp(port, url)
            #expect(answer.status == 200 && answer.headers["content-type"] == "image/jpeg", "\(language): \(url): \(answer.summary)")
            // Tampered: another scale, another asset, another key id with the same signature.
            let scaled = try tcp(port, url.replacingOccurrences(of: "scale=2", with: "scale=3"))
            #expect(scaled.status == 403 && scaled.errorCode == "badSignature", "\(scaled.summary)")
            let moved = try tcp(port, url.replacingOccurrences(of: "a%20b.jpg", with: "plain.jpg"))
            #expect(moved.status == 403 && moved.errorCode == "badSignature", "\(moved.summary)")
            let rekeyed = try tcp(port, url.replacingOccurrences(of: "key=k1", with: "key=k2"))
            #expect(rekeyed.status == 403 && rekeyed.errorCode == "badSignature", "\(rekeyed.summary)")
            // Slot parameters stay outside the signature... but slots need the client role.
            let slotted = try tcp(port, url + "&client=page-1&slot=c1")
            #expect(slotted.status == 403 && slotted.text.contains("client role"), "\(slotted.summary)")
        }
        // The rotation's second key; an inline spec when signed; thumbd sign.
        let second = try signed("python", key: "k2", secret: Self.key2, kind: "40x30,fill", asset: "photos/plain.jpg")
        #expect(try tcp(port, second).status == 200, "\(second)")
        #expect(try tcp(port, "/v1/thumbnails/40x30,fill/photos/plain.jpg").errorCode == "signatureRequired")
        let expired = try signed("node", key: "k1", secret: Self.key1, kind: "large", asset: "photos/plain.jpg",
                                 expires: String(Int(Date().timeIntervalSince1970) - 5))
        #expect(try tcp(port, expired).errorCode == "signatureExpired", "\(expired)")
        let unknown = try signed("python", key: "k9", secret: Self.key1, kind: "large", asset: "photos/plain.jpg")
        #expect(try tcp(port, unknown).errorCode == "unknownKey", "\(unknown)")
        let fromCLI = try runSign(daemon, ["--key", "k2", "--scale", "3", "--expires", "600", "contact-avatar", "photos/a b.jpg"])
        let cli = try tcp(port, fromCLI)
        #expect(cli.status == 200, "\(fromCLI): \(cli.summary)")
        // The socket here has signatures off: its clients need none.
        #expect(try daemon.request("/v1/thumbnails/large/photos/plain.jpg").status == 200)
        // Operators on TCP by bearer token; a wrong token is 401, not anonymous.
        let metrics = try tcp(port, "/metrics", headers: ["Authorization: Bearer \(Self.operatorToken)"])
        #expect(metrics.status == 200, "\(metrics.summary)")
        #expect(ServeMetrics(metrics.text)["thumbd_access_refusals_total{route=\"thumbnails\",reason=\"signature\"}"] == 10,
                "\(metrics.text)")
        let wrong = try tcp(port, "/metrics", headers: ["Authorization: Bearer nope"])
        #expect(wrong.status == 401 && wrong.headers["www-authenticate"]?.hasPrefix("Bearer") == true, "\(wrong.summary)")
        #expect(try tcp(port, "/metrics").status == 403, "anonymous TCP is public")
    }

    func runSign(_ daemon: ServeDaemon, _ arguments: [String]) throws -> String {
        try Self.output(of: [try ServePaths.thumbd(), "sign", "--config", daemon.configPath] + arguments)
    }

    @Test("finding 1: no web page drives the TCP listener: a foreign Host is 421, a text/plain body 415, a foreign Origin 403; allowed origins get CORS and preflights")
    func browserSafeTCP() throws {
        let port = try ServeEndpoint.freePort()
        let daemon = try signingDaemon(port: port)
        defer { _ = daemon.stop() }
        let operatorAuth = "Authorization: Bearer \(Self.operatorToken)"
        // DNS rebinding: the page's own name, pointed at 127.0.0.1.
        let rebound = try tcp(port, "/metrics", headers: ["Host: evil.example:\(port)", operatorAuth])
        #expect(rebound.status == 421 && rebound.errorCode == "misdirectedRequest", "\(rebound.summary)")
        for host in ["localhost:\(port)", "127.0.0.1:\(port)", "127.0.0.1"] {
            #expect(try tcp(port, "/healthz", headers: ["Host: \(host)"]).status == 200, "\(host)")
        }
        // The CORS "simple request" that queued 3,081 renders on b259acf.
        let body = #"{"assets":["photos/plain.jpg"],"kinds":["4000x4000"]}"#
        let simple = try tcp(port, "/v1/prefetch", method: "POST", headers: [operatorAuth], body: body, contentType: "text/plain")
        #expect(simple.status == 415 && simple.errorCode == "unsupportedMediaType", "\(simple.summary)")
        let placeholders = try tcp(port, "/v1/placeholders", method: "POST", body: #"{"assets":["photos/plain.jpg"]}"#, contentType: "text/plain")
        #expect(placeholders.status == 415, "\(placeholders.summary)")
        let foreign = try tcp(port, "/v1/placeholders", method: "POST", headers: ["Origin: https://evil.example"],
                              body: #"{"assets":["photos/plain.jpg"]}"#)
        #expect(foreign.status == 403 && foreign.errorCode == "originNotAllowed", "\(foreign.summary)")
        let allowed = try tcp(port, "/v1/placeholders", method: "POST", headers: ["Origin: https://app.example"],
                              body: #"{"assets":["photos/plain.jpg"]}"#)
        #expect(allowed.status == 200 && allowed.headers["access-control-allow-origin"] == "https://app.example", "\(allowed.summary)")
        #expect(allowed.headers["access-control-expose-headers"]?.contains("X-Thumbd-Token") == true)
        let preflight = try tcp(port, "/v1/placeholders", method: "OPTIONS",
                                headers: ["Origin: https://app.example", "Access-Control-Request-Method: POST",
                                          "Access-Control-Request-Headers: content-type"])
        #expect(preflight.status == 204, "\(preflight.summary)")
        #expect(preflight.headers["access-control-allow-origin"] == "https://app.example")
        #expect(preflight.headers["access-control-allow-methods"]?.contains("POST") == true)
        #expect(preflight.headers["access-control-allow-headers"]?.lowercased().contains("content-type") == true)
        let badPreflight = try tcp(port, "/v1/placeholders", method: "OPTIONS",
                                   headers: ["Origin: https://evil.example", "Access-Control-Request-Method: POST"])
        #expect(badPreflight.status == 403 && badPreflight.headers["access-control-allow-origin"] == nil, "\(badPreflight.summary)")
        let purgeMethod = try tcp(port, "/v1/cache", method: "OPTIONS",
                                  headers: ["Origin: https://app.example", "Access-Control-Request-Method: PUT"])
        #expect(purgeMethod.status == 405, "\(purgeMethod.summary)")
        // Public callers: placeholders, kinds and health yes; prefetch and slots no.
        #expect(try tcp(port, "/v1/kinds").status == 200)
        let prefetch = try tcp(port, "/v1/prefetch", method: "POST", body: body)
        #expect(prefetch.status == 403 && prefetch.text.contains("client role"), "\(prefetch.summary)")
        #expect(try tcp(port, "/v1/slots/app/c1", method: "DELETE").status == 403)
    }

    @Test("docs/access.md's signers are the files the signing test runs")
    func accessDocSignersAreTheTestedFiles() throws {
        let doc = try String(contentsOfFile: ServePaths.packageRoot + "/docs/access.md", encoding: .utf8)
        for (file, fence) in [("sign.py", "```python\n"), ("sign.mjs", "```js\n")] {
            let code = try String(contentsOfFile: ServePaths.packageRoot + "/docs/signers/" + file, encoding: .utf8)
            #expect(doc.contains(fence + code + "```"), "docs/access.md's \(fence) block differs from docs/signers/\(file)")
        }
    }
}
