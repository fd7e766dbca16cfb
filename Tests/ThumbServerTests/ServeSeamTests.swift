import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbServer
#if canImport(Glibc)
import Glibc
#endif

/// Round three of hostile input (issue 37), the seams between the daemon and what stands in front
/// of it: a query name given twice, two body lengths, answers a shared cache must keep apart by
/// Origin, and a client arriving at a full listener.
@Suite("thumbd serve: seams with proxies and full listeners")
struct ServeSeamTests {
    func daemon() throws -> ServeDaemon {
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1),
                                     assets: ["photos/small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        try daemon.start()
        return daemon
    }

    @Test("a query name given twice is 400 on every route (nginx's $arg_ reads the first, the daemon read the last)")
    func repeatedQueryNamesAreRefused() throws {
        let daemon = try daemon()
        let rendersBefore = try daemon.metrics()["thumbd_render_seconds_count"]
        let repeated = ["/v1/thumbnails/large/photos/small.png?scale=1&scale=2", "/v1/thumbnails/large/photos/small.png?format=png&format=webp",
                        "/v1/thumbnails/large/photos/small.png?sig=a&key=k&sig=b", "/v1/placeholders?assets=photos/small.png&assets=x.png",
                        "/v1/assets?limit=1&limit=2", "/v1/kinds?a=1&a=2", "/healthz?x&x"]
        for path in repeated {
            let answer = try daemon.request(path)
            #expect(answer.status == 400 && answer.errorCode == "badQuery" && answer.text.contains("more than once"), "\(path): \(answer.summary)")
        }
        let purge = try daemon.request("/v1/cache?asset=photos/small.png&asset=other.png", method: "DELETE")
        #expect(purge.status == 400, "\(purge.summary)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_render_seconds_count"] == rendersBefore, "a refused request rendered: \(metrics.text)")
        // Once each, the same names are fine.
        #expect(try daemon.request("/v1/thumbnails/large/photos/small.png?scale=1&format=png").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("Content-Length twice, or with Transfer-Encoding, or Transfer-Encoding twice: 400 and the connection closed, so nothing after the headers is read as a request")
    func ambiguousFramingIsRefusedAndClosed() throws {
        let daemon = try daemon()
        let endpoint = ServeEndpoint.unix(daemon.socket)
        // What a proxy that read the other length would pass on: a second request hidden in the body.
        let smuggled = "GET /v1/kinds HTTP/1.1\r\nHost: thumbd\r\n\r\n"
        let body = "{\"assets\":[\"photos/small.png\"],\"kinds\":[\"large\"]}"
        let framings = [
            "Content-Length: \(body.utf8.count)\r\nContent-Length: \(body.utf8.count + smuggled.utf8.count)\r\n",
            "Content-Length: \(body.utf8.count + smuggled.utf8.count)\r\nContent-Length: \(body.utf8.count)\r\n",
            "Content-Length: \(body.utf8.count)\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: \(body.utf8.count)\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
        ]
        for framing in framings {
            let request = "POST /v1/prefetch HTTP/1.1\r\nHost: thumbd\r\nContent-Type: application/json\r\n\(framing)\r\n\(body)\(smuggled)"
            let answer = ServeRaw.exchange(endpoint, request, timeout: 10)
            #expect(answer.failure == nil, "the connection was not closed after the refusal: \(framing.debugDescription) \(answer)")
            #expect(answer.status == 400 && String(decoding: answer.body, as: UTF8.self).contains("ambiguousFraming"),
                    "\(framing.debugDescription): \(answer)")
            #expect(!String(decoding: answer.body, as: UTF8.self).contains("HTTP/1.1"), "a second answer followed: \(answer)")
        }
        // One length, once: answered as before.
        let plain = ServeRaw.exchange(endpoint, "POST /v1/prefetch HTTP/1.1\r\nHost: thumbd\r\nContent-Type: application/json\r\n"
                                      + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)", timeout: 10)
        #expect(plain.status == 202, "\(plain)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_http_ambiguous_framing_total"] == Double(framings.count), "\(metrics.text)")
        #expect(metrics.requests("kinds", 200) == 0, "a smuggled request was answered: \(metrics.text)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("every answer says Vary: Origin (and Accept where the format was negotiated), with or without an Origin, hits and misses, images, JSON and errors")
    func everyAnswerVariesWithOrigin() throws {
        let daemon = try daemon()
        let thumbnail = "/v1/thumbnails/large/photos/small.png"
        for round in ["miss", "hit"] {
            let plain = try daemon.request(thumbnail)
            #expect(plain.status == 200 && plain.headers["vary"] == "Accept, Origin", "\(round): \(plain.summary)")
            let fixed = try daemon.request(thumbnail + "?format=png&as=path")
            #expect(fixed.status == 200 && fixed.headers["vary"] == "Accept, Origin", "\(round) as=path: \(fixed.summary)")
        }
        for path in ["/v1/kinds", "/healthz", "/v1/thumbnails/large/missing.png", "/v1/thumbnails/nokind/photos/small.png"] {
            let answer = try daemon.request(path)
            #expect(answer.headers["vary"] == "Origin", "\(path): \(answer.summary)")
        }
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("two spellings of one name (NFC and NFD café, K and the Kelvin sign) are two files: neither is served the other's cached or vouched thumbnail")
    func unicodeTwinsAreTwoAssets() throws {
        // Twins as bytes, each a picture of another shape: a portrait and a landscape JPEG.
        let portrait = ServePaths.samples + "/portrait-exif8.jpg", landscape = ServePaths.samples + "/landscape-exif6.jpg"
        let pairs = [("caf%C3%A9", "cafe%CC%81"), ("%E2%84%AAitten", "Kitten")]
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1), assets: [:])
        // Written here, not through the fixture's dictionary: its `String` keys would take the twins for one name.
        for (first, second) in pairs {
            for (encoded, source) in [(first, portrait), (second, landscape)] {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
                let descriptor = open(daemon.assets + "/" + encoded.removingPercentEncoding! + ".jpg", O_WRONLY | O_CREAT | O_EXCL, 0o644)
                #expect(descriptor >= 0 && bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == bytes.count)
                close(descriptor)
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.assets).count == 4)
        try daemon.start()
        func size(_ encoded: String) throws -> [Int] {
            let answer = try daemon.request("/v1/thumbnails/large/\(encoded).jpg?as=path")
            guard answer.status == 200, let width = answer.json["width"] as? Int, let height = answer.json["height"] as? Int else {
                throw TestFailure("\(encoded): \(answer.summary)")
            }
            return [width, height]
        }
        for (first, second) in pairs {
            // Each twin twice (a render, then a hit that the watcher vouches for), in both orders.
            let firstSize = try size(first)
            #expect(try size(first) == firstSize)
            let secondSize = try size(second)
            #expect(firstSize[0] < firstSize[1] && secondSize[0] > secondSize[1], "\(second) was served \(first)'s thumbnail: \(firstSize), \(secondSize)")
            #expect(try size(second) == secondSize && size(first) == firstSize)
            // Their placeholders: one member each (a dictionary keyed by `String` kept one), each its own.
            let names = [first, second].map { $0.removingPercentEncoding! + ".jpg" }
            let asked = try daemon.request("/v1/placeholders", method: "POST", body: "{\"assets\":[\"\(names[0])\",\"\(names[1])\"]}")
            let body = Array(asked.text.utf8)
            func member(_ name: String) -> String? {
                let key = Array("\"\(name)\":{".utf8)
                guard let start = (0...(body.count - key.count)).first(where: { body[$0..<($0 + key.count)].elementsEqual(key) }) else { return nil }
                let rest = body[(start + key.count)...]
                return String(decoding: rest.prefix { $0 != UInt8(ascii: "}") }, as: UTF8.self)
            }
            let members = names.map(member)
            #expect(asked.status == 200 && members.allSatisfy { $0?.contains("\"ready\"") == true } && members[0] != members[1],
                    "\(asked.summary)")
        }
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("a listener at its limit answers the next client at once: 503 with Retry-After, its probe of /healthz or /readyz as usual, then closes; never a silent wait")
    func aFullListenerAnswersAtOnce() throws {
        let directory = try ScratchDirectory("seam")
        defer { directory.remove() }
        let socket = directory.path("s.sock")
        let listener = try Listener.unix(path: socket, mode: 0o600, group: nil)
        // Deadlines far away: the held connections stay held for the whole test, however slow the machine.
        let server = try HTTPServer(listeners: [listener], threadsPerListener: 1, maxConnections: 4,
                                    requestDeadline: HTTPRequestDeadline(seconds: 120, crowdedSeconds: 120, crowdedFraction: 1)) { request, respond in
            respond(.json(200, ["path": request.path]))
        }
        defer { server.stop() }
        let endpoint = ServeEndpoint.unix(socket)
        // The limit's worth of idle connections (a client that connected and says nothing yet).
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        for _ in 0..<4 {
            guard let (descriptor, _) = endpoint.connect() else { throw TestFailure("cannot connect") }
            held.append(descriptor)
        }
        try servePoll(timeout: 20, "the four connections accepted") { server.openConnections == 4 }
        for round in 0..<3 {
            let refused = ServeRaw.exchange(endpoint, "GET /v1/kinds HTTP/1.1\r\nHost: thumbd\r\n\r\n", timeout: 15)
            #expect(refused.failure == nil && refused.status == 503 && refused.headers["retry-after"] == "1"
                    && String(decoding: refused.body, as: UTF8.self).contains("tooManyConnections"), "round \(round): \(refused)")
            for probe in ["/healthz", "/readyz"] {
                let answered = ServeRaw.exchange(endpoint, "GET \(probe) HTTP/1.1\r\nHost: thumbd\r\n\r\n", timeout: 15)
                #expect(answered.failure == nil && answered.status == 200 && answered.headers["connection"]?.lowercased() == "close",
                        "round \(round) \(probe): \(answered)")
            }
        }
        // The held ones were never disturbed: each still gets its answer.
        for descriptor in held {
            let request = Array("GET /v1/kinds HTTP/1.1\r\nHost: thumbd\r\n\r\n".utf8)
            #expect(request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
            var buffer = [UInt8](repeating: 0, count: 4096)
            #expect(ServeRaw.wait(descriptor, for: Int16(POLLIN), until: Date().addingTimeInterval(15)) && recv(descriptor, &buffer, buffer.count, 0) > 0)
            #expect(String(decoding: buffer.prefix(12), as: UTF8.self) == "HTTP/1.1 200", "\(String(decoding: buffer.prefix(80), as: UTF8.self))")
        }
    }
}
