import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline
@testable import ThumbServer
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// Issue 11's hit path: a hit is answered with the cache entry's prepared libmicrohttpd response
/// (its header lines formatted once, its body sent from the entry's own bytes), built once per
/// entry instead of once per request. These tests run an `HTTPServer` in this process (its
/// response counters are this process's; no other suite starts one) and read what it sends.
@Suite("thumbd serve: the hit path (prepared responses)", .serialized)
struct ServeHitPathTests {
    /// A real thumbnail-sized JPEG of the corpus, keyed as the daemon keys one.
    static func thumbnail(bytes: [UInt8]? = nil) throws -> CachedThumbnail {
        let data = try bytes ?? Array(Data(contentsOf: URL(fileURLWithPath: ServePaths.corpus + "/exif-samples/Canon_40D.jpg")))
        let kind = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)
        let version = AssetVersion(path: "shop/a.jpg", size: 5_000, modifiedNanoseconds: 1_700_000_000_000_000_001, inode: 42, device: 2049)
        let key = CacheKey(asset: version, kind: kind, scale: 1, encoder: EncoderSettings())
        return CachedThumbnail(key: key, bytes: data, filePath: "/nonexistent/\(key.digest).jpg", format: .jpeg, width: 256, height: 171)
    }

    /// What the API answers for a hit on `thumbnail` (`vary`: the kind's format was negotiated).
    static func hit(_ thumbnail: CachedThumbnail, vary: Bool, ifNoneMatch: String? = nil) -> HTTPResponse {
        ThumbnailAPI.httpResponse(for: PipelineResponse(token: nil, result: .success(thumbnail)), asPath: false,
                                  ifNoneMatch: ifNoneMatch, variesWithAccept: vary)
    }

    static func counts() -> (prepared: Int, sends: Int, perRequest: Int) {
        (ResponseCounters.prepared.load(ordering: .relaxed), ResponseCounters.preparedSends.load(ordering: .relaxed),
         ResponseCounters.perRequest.load(ordering: .relaxed))
    }

    @Test("N hits on one entry build one libmicrohttpd response per Vary form, not one per hit; every answer is the same")
    func hitsReuseThePreparedResponse() throws {
        let thumbnail = try Self.thumbnail()
        let server = try HitPathServer { request, respond in
            respond(Self.hit(thumbnail, vary: request.path.hasSuffix("/vary")))
        }
        let client = try server.client()
        let before = Self.counts()
        var answers: [HitPathAnswer] = []
        for _ in 0..<40 { answers.append(try client.get("/plain")) }
        for _ in 0..<10 { answers.append(try client.get("/vary")) }
        let after = Self.counts()
        // Before prepared responses every one of these 50 answers built (and copied into) its own.
        #expect(after.perRequest - before.perRequest == 0)
        #expect(after.prepared - before.prepared == 2, "one for the plain form, one for Vary: Accept")
        #expect(after.sends - before.sends == 50)
        for answer in answers {
            #expect(answer.status == 200)
            #expect(answer.body == thumbnail.bytes)
        }
        #expect(Set(answers.prefix(40).map(\.linesWithoutDate)).count == 1)
        #expect(Set(answers.suffix(10).map(\.linesWithoutDate)).count == 1)
    }

    @Test("a prepared response sends byte for byte what one built for the request sends (GET and HEAD, with and without Vary), with the hit's old header lines")
    func preparedAndBuiltAnswersAreTheSame() throws {
        let thumbnail = try Self.thumbnail()
        let server = try HitPathServer { request, respond in
            var response = Self.hit(thumbnail, vary: request.path.contains("vary"))
            precondition(response.reusable != nil, "a hit should be reusable")
            // Any change to the fields drops the prepared form: this one is built per request.
            if request.path.hasPrefix("/built") { response.headers = response.headers }
            precondition(request.path.hasPrefix("/built") == (response.reusable == nil))
            respond(response)
        }
        let client = try server.client()
        for method in ["GET", "HEAD"] {
            for vary in [false, true] {
                let suffix = vary ? "/vary" : "/plain"
                let built = try client.send(method, "/built" + suffix)
                let prepared = try client.send(method, "/prepared" + suffix)
                #expect(built.status == 200 && prepared.status == 200)
                #expect(prepared.linesWithoutDate == built.linesWithoutDate, "\(method) \(suffix)")
                #expect(prepared.body == built.body)
                #expect(prepared.body == (method == "GET" ? thumbnail.bytes : []))
                // The lines a hit always carried (before prepared responses: Content-Type, then
                // ETag, Cache-Control, then Vary: Origin always, Accept too when negotiated),
                // whatever libmicrohttpd adds around them.
                let expected = ["Content-Type: image/jpeg", "ETag: \"\(thumbnail.key.digest)\"",
                                "Cache-Control: public, max-age=31536000, immutable", vary ? "Vary: Accept, Origin" : "Vary: Origin"]
                #expect(prepared.lines.filter { line in expected.contains(line) } == expected, "\(prepared.lines)")
                #expect(prepared.lines.contains("Content-Length: \(thumbnail.bytes.count)"))
            }
        }
        // A revalidation: 304 with the validators and caching lines (no Content-Type), as before.
        for vary in [false, true] {
            let notModified = Self.hit(thumbnail, vary: vary, ifNoneMatch: "\"other\", \t\(thumbnail.etag) ")
            #expect(notModified.status == 304 && notModified.reusable == nil && notModified.body.isEmpty)
            #expect(notModified.headers.map { "\($0.0): \($0.1)" }
                == ["ETag: \(thumbnail.etag)", "Cache-Control: public, max-age=31536000, immutable", vary ? "Vary: Accept, Origin" : "Vary: Origin"])
        }
        #expect(Self.hit(thumbnail, vary: false, ifNoneMatch: "\"other\"").status == 200)
        // `*` matches no thumbnail: its answer may be the render of this very request.
        #expect(Self.hit(thumbnail, vary: false, ifNoneMatch: "*").status == 200)
        // A slot's answer carries its token: never the shared form.
        let slotted = ThumbnailAPI.httpResponse(for: PipelineResponse(token: 7, result: .success(thumbnail)), asPath: false,
                                                ifNoneMatch: nil)
        #expect(slotted.reusable == nil && slotted.headers.last.map { "\($0.0): \($0.1)" } == "X-Thumbd-Token: 7")
    }

    @Test("a hit answered after stopping began carries Connection: close (the shared form cannot), with the same lines and bytes otherwise")
    func aHitWhileStoppingClosesTheConnection() throws {
        let thumbnail = try Self.thumbnail()
        let held = Mutex<(@Sendable (HTTPResponse) -> Void)?>(nil)
        let arrived = DispatchSemaphore(value: 0)
        let server = try HitPathServer { request, respond in
            if request.path == "/held" {
                held.withLock { $0 = respond }
                arrived.signal()
            } else {
                respond(Self.hit(thumbnail, vary: false))
            }
        }
        let client = try server.client()
        let before = try client.get("/plain")
        #expect(before.header("connection") == nil)
        try client.write("GET /held HTTP/1.1\r\nHost: thumbd\r\n\r\n")
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        // Received before stopping, answered after: answered as usual, but the connection closes.
        server.server.quiesce()
        let respond = try #require(held.withLock { $0 })
        let sendsBefore = Self.counts().sends
        respond(Self.hit(thumbnail, vary: false))
        let answer = try client.read(method: "GET")
        #expect(Self.counts().sends == sendsBefore, "the shared response was sent while stopping")
        #expect(answer.status == 200)
        #expect(answer.header("connection")?.lowercased() == "close", "\(answer.lines)")
        #expect(answer.body == thumbnail.bytes)
        #expect(answer.linesWithoutDate.filter { !$0.hasPrefix("Connection:") } == before.linesWithoutDate)
        #expect(try client.isClosed(), "the connection was kept after Connection: close")
    }

    @Test("a prepared response outlives its cache entry while a connection still sends it; its bytes are freed once, after that")
    func aPreparedResponseOutlivesItsEntry() throws {
        // 8 MiB: far more than the socket's buffers, so the answer is still being sent when the
        // entry goes. Made from a seed, so that the check below holds no reference to the bytes.
        func pattern(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: (index &* 2_654_435_761) >> 13) }
        let count = 8 << 20
        let entry = Mutex<CachedThumbnail?>(try Self.thumbnail(bytes: (0..<count).map(pattern)))
        let served = Mutex<ServedThumbnail?>(nil)
        let server = try HitPathServer { _, respond in
            guard let thumbnail = entry.withLock({ $0 }) else { return respond(HTTPResponse(status: 410)) }
            served.withLock { $0 = ServedThumbnail.of(thumbnail) }
            respond(Self.hit(thumbnail, vary: false))
        }
        let liveBefore = ResponseCounters.liveBodies.load(ordering: .relaxed)
        let client = try server.client()
        let sendsBefore = Self.counts().sends
        try client.write("GET /big HTTP/1.1\r\nHost: thumbd\r\n\r\n")
        try servePoll(timeout: 10, "the answer queued") { Self.counts().sends == sendsBefore + 1 }
        // The cache drops the entry (eviction, a changed asset) while the client has read nothing.
        weak var droppedServed: ServedThumbnail?
        served.withLock { droppedServed = $0; $0 = nil }
        entry.withLock { $0 = nil }
        #expect(droppedServed == nil, "the entry's served form (and its reference to the response) should be gone")
        #expect(ResponseCounters.liveBodies.load(ordering: .relaxed) == liveBefore + 1, "libmicrohttpd still holds the body")
        let answer = try client.read(method: "GET", timeout: 30)
        #expect(answer.status == 200 && answer.body.count == count)
        #expect(answer.body.indices.allSatisfy { answer.body[$0] == pattern($0) }, "the bytes sent are not the entry's")
        // Once the answer is sent, libmicrohttpd frees the response, and its free callback the bytes.
        try servePoll(timeout: 10, "the body released") { ResponseCounters.liveBodies.load(ordering: .relaxed) == liveBefore }
        #expect(try client.get("/again").status == 410, "nothing answers from the dropped entry")
    }

    @Test("thumbd serve: hits build no response (/metrics), and once the asset changes its old entry's answer is never sent again")
    func daemonHitsAndAChangedAsset() throws {
        let first = ServePaths.corpus + "/exif-samples/Canon_40D.jpg", second = ServePaths.corpus + "/exif-samples/Fujifilm_FinePix6900ZOOM.jpg"
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1), assets: ["shop/a.jpg": first])
        try daemon.start()
        let path = "/v1/thumbnails/large/shop/a.jpg"
        let rendered = try daemon.request(path + "?wait=30000")
        try #require(rendered.status == 200, "\(rendered.summary)")
        let oldETag = try #require(rendered.headers["etag"])
        let client = try HitPathClient(socket: daemon.socket)
        _ = try client.get(path) // the memory hit that makes the watcher vouch for the version
        let before = try daemon.metrics()
        let hits = (0..<30).map { _ in Result { try client.get(path) } }
        let after = try daemon.metrics()
        for hit in hits {
            let answer = try hit.get()
            #expect(answer.status == 200 && answer.body == rendered.body && answer.header("etag") == oldETag)
        }
        let built = { (metrics: ServeMetrics, how: String) in metrics["thumbd_http_responses_built_total{how=\"\(how)\"}"] }
        // Only the first /metrics answer was built between the two reads (before: 31 more).
        #expect(built(after, "per_request") - built(before, "per_request") == 1)
        #expect(built(after, "prepared") == built(before, "prepared"))
        #expect(after["thumbd_http_prepared_sends_total"] - before["thumbd_http_prepared_sends_total"] == 30)
        #expect(after["thumbd_vouched_hits_total"] - before["thumbd_vouched_hits_total"] == 30)

        // Another image under the same name: the watcher drops the entry and its served form.
        let scratch = daemon.assets + "/shop/.a.jpg.new"
        try FileManager.default.copyItem(atPath: second, toPath: scratch)
        #expect(rename(scratch, daemon.assets + "/shop/a.jpg") == 0)
        var changed: HitPathAnswer?
        try servePoll(timeout: 20, "an answer for the changed asset") {
            let answer = try client.get(path + "?wait=30000")
            if answer.status == 200 && answer.header("etag") != oldETag { changed = answer }
            return changed != nil
        }
        let now = try #require(changed)
        #expect(now.body != rendered.body)
        for _ in 0..<5 {
            let again = try client.get(path)
            #expect(again.header("etag") == now.header("etag") && again.body == now.body, "the old entry's response was sent again")
        }
        // Revalidating with the old ETag gets the new thumbnail; with the new one, 304.
        try client.write("GET \(path) HTTP/1.1\r\nHost: thumbd\r\nIf-None-Match: \(oldETag)\r\n\r\n")
        let stale = try client.read(method: "GET")
        #expect(stale.status == 200 && stale.body == now.body)
        try client.write("GET \(path) HTTP/1.1\r\nHost: thumbd\r\nIf-None-Match: \(now.header("etag") ?? "")\r\n\r\n")
        let fresh = try client.read(method: "HEAD") // a 304 has no body
        #expect(fresh.status == 304 && fresh.header("content-type") == nil && fresh.header("etag") == now.header("etag"))
        // The smaller connection pool (24 KiB, zeroed at each request) still holds the longest
        // request the API takes: a 4096-byte path sent all percent-encoded, with browser headers.
        let longest = try daemon.request("/v1/thumbnails/large/" + String(repeating: "%C3%A9", count: 2048), headers: [
            "Accept: image/avif,image/webp,image/apng,image/*,*/*;q=0.8", "Accept-Language: en-US,en;q=0.9,de;q=0.8",
            "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"])
        #expect(longest.status == 404 && longest.errorCode != nil, "answered by libmicrohttpd, not the API: \(longest.summary)")
        #expect(daemon.stop() == 0)
    }

    @Test("what the served form keeps per entry (header lines, both prepared responses) fits MemoryCache.servingReserveBytes")
    func theServedFormFitsTheBudgetsReserve() async {
        // In a child process of its own: in this one other suites allocate all the while.
        await #expect(processExitsWith: .success) {
            let entries = 2_000
            let bytes = [UInt8](repeating: 1, count: 4_096) // shared by every entry: not what is measured
            let kind = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)
            let thumbnails = (0..<entries).map { index in
                let version = AssetVersion(path: "shop/f\(index / 100)/IMG_\(index).jpg", size: 5_000,
                                           modifiedNanoseconds: 1_700_000_000_000_000_000 + Int64(index), inode: UInt64(index), device: 2049)
                let key = CacheKey(asset: version, kind: kind, scale: 1, encoder: EncoderSettings())
                return CachedThumbnail(key: key, bytes: bytes, filePath: "/c/\(key.digest).jpg", format: .jpeg, width: 256, height: 171)
            }
            let before = HeapUsage.bytesInUse
            for thumbnail in thumbnails {
                let served = ServedThumbnail.of(thumbnail)
                guard served.response(variesWithAccept: false) != nil, served.response(variesWithAccept: true) != nil else { exit(2) }
            }
            let perEntry = (HeapUsage.bytesInUse - before) / entries
            exit(perEntry > 0 && perEntry <= MemoryCache.servingReserveBytes ? 0 : 1)
        }
    }
}

/// An `HTTPServer` on a Unix socket in a scratch folder, stopped when dropped.
final class HitPathServer {
    let directory: ScratchDirectory
    let socket: String
    let server: HTTPServer

    init(handler: @escaping HTTPHandler) throws {
        directory = try ScratchDirectory("hit")
        socket = directory.path("s.sock")
        let listener = try Listener.unix(path: socket, mode: 0o600, group: nil)
        server = try HTTPServer(listeners: [listener], threadsPerListener: 1, maxConnections: 8, handler: handler)
    }

    deinit {
        server.stop()
        directory.remove()
    }

    func client() throws -> HitPathClient { try HitPathClient(socket: socket) }
}

struct HitPathAnswer {
    var status = 0
    /// The header lines as sent, in order (without the status line).
    var lines: [String] = []
    var body: [UInt8] = []

    var linesWithoutDate: [String] { lines.filter { !$0.lowercased().hasPrefix("date:") } }

    func header(_ name: String) -> String? {
        lines.first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.drop { $0 != ":" }.dropFirst()).trimmingCharacters(in: .whitespaces) }
    }
}

/// One keep-alive connection, blocking reads with a deadline (poll).
final class HitPathClient {
    let descriptor: Int32
    private var pending: [UInt8] = []

    init(socket path: String) throws {
        guard case let (descriptor, _)? = ServeEndpoint.unix(path).connect() else { throw TestFailure("cannot connect to \(path)") }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    func write(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        let deadline = Date().addingTimeInterval(10)
        while !bytes.isEmpty {
            guard ServeRaw.wait(descriptor, for: Int16(POLLOUT), until: deadline) else { throw TestFailure("could not send") }
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw TestFailure("send: \(String(cString: strerror(errno)))")
            }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Reads more into `pending`; false at the end of the stream.
    private func fill(until deadline: Date) throws -> Bool {
        guard ServeRaw.wait(descriptor, for: Int16(POLLIN), until: deadline) else { throw TestFailure("no answer in time") }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        if count > 0 { pending += buffer[..<count]; return true }
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
        return false
    }

    /// One answer: its head, then Content-Length bytes of body (none for HEAD).
    func read(method: String, timeout: Double = 10) throws -> HitPathAnswer {
        let deadline = Date().addingTimeInterval(timeout)
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = pending.count >= 4 ? (0...(pending.count - 4)).first { pending[$0..<($0 + 4)].elementsEqual(separator) } : nil
            if end == nil { guard try fill(until: deadline) else { throw TestFailure("closed before an answer") } }
        }
        guard let end else { throw TestFailure("no head") }
        let head = String(decoding: pending[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        pending.removeFirst(end + 4)
        var answer = HitPathAnswer()
        let fields = head.first?.split(separator: " ") ?? []
        answer.status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
        answer.lines = Array(head.dropFirst())
        let length = method == "HEAD" ? 0 : Int(answer.header("content-length") ?? "0") ?? 0
        while pending.count < length {
            guard try fill(until: deadline) else { throw TestFailure("closed after \(pending.count) of \(length) body bytes") }
        }
        answer.body = Array(pending[..<length])
        pending.removeFirst(length)
        return answer
    }

    func send(_ method: String, _ path: String) throws -> HitPathAnswer {
        try write("\(method) \(path) HTTP/1.1\r\nHost: thumbd\r\n\r\n")
        return try read(method: method)
    }

    func get(_ path: String) throws -> HitPathAnswer { try send("GET", path) }

    /// Whether the server closed the connection (read within 5 s).
    func isClosed() throws -> Bool {
        guard pending.isEmpty else { return false }
        return try !fill(until: Date().addingTimeInterval(5))
    }
}
