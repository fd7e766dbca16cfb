import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Stopping (issue 8, item 14): after SIGTERM the daemon drains what it received, and a client
/// that connects meanwhile used to find the listening socket no longer served, then reset.
/// Now it is answered 503 with Retry-After and `Connection: close`.
@Suite("thumbd serve: stopping")
struct ServeStoppingTests {
    @Test("after SIGTERM, while the daemon drains, new connections get 503 with Retry-After on the Unix socket and on TCP; then it exits 0")
    func newConnectionsWhileDrainingGet503() throws {
        let photos = try ServePaths.largePhotos()
        let port = try ServeEndpoint.freePort()
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1, server: ["listen": "127.0.0.1:\(port)"]),
                                     assets: ["p0.jpg": photos[0]])
        try daemon.start()
        let unix = ServeEndpoint.unix(daemon.socket), tcp = ServeEndpoint.tcp(port: port, source: "127.0.0.1")

        // A large thumbnail (a camera photo at 4096 px), cached, then asked for by a client that
        // never reads: its answer cannot be sent, so the drain waits for it (up to 10 s).
        let big = "/v1/thumbnails/xx-large/p0.jpg?scale=4"
        let warm = try daemon.request(big, timeout: 60)
        try #require(warm.status == 200 && warm.body.count > 1 << 20, "expected a large thumbnail: \(warm.summary)")
        guard let (stalled, _) = unix.connect() else { throw TestFailure("cannot connect") }
        var stalledOpen = true
        defer { if stalledOpen { close(stalled) } }
        let request = Array("GET \(big) HTTP/1.1\r\nHost: thumbd\r\n\r\n".utf8)
        #expect(request.withUnsafeBytes { send(stalled, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        try daemon.waitForMetrics("the stalled request answered by the API") { $0.requests("thumbnails", 200) == 2 }

        daemon.signal(SIGTERM)
        try daemon.waitForLog("<5>stopping")
        usleep(300_000) // the log line comes right before the server stops taking work

        let probes = [(unix, "/healthz"), (unix, "/v1/thumbnails/large/p0.jpg"), (tcp, "/healthz"), (tcp, "/v1/kinds")]
        for (endpoint, path) in probes {
            let answer = ServeRaw.get(endpoint, path, timeout: 5)
            #expect(answer.status == 503, "\(path) on \(endpoint) while draining: \(answer)")
            #expect(Int(answer.headers["retry-after"] ?? "").map { $0 > 0 } == true, "no Retry-After: \(answer)")
            #expect(answer.headers["connection"]?.lowercased() == "close", "the connection should not be kept: \(answer)")
            let json = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
            #expect(json?["error"] as? String == "shuttingDown", "\(answer)")
        }
        #expect(daemon.isRunning, "the daemon stopped before the stalled answer was sent: the probes proved nothing")

        close(stalled)
        stalledOpen = false
        #expect(daemon.child?.wait(timeout: 20)?.status == 0, "\(daemon.log)")
        #expect(daemon.log.contains("<5>stopped"), "\(daemon.log)")
    }
}
