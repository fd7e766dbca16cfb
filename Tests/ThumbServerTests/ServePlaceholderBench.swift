import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `POST /v1/placeholders` for a screen of 50 known assets (issue 12: < 5 ms), measured by a
/// client over the daemon's Unix socket: a new connection per request (`Connection: close`, so
/// the connect is counted too), `requests` sequential requests after a warm-up; p50 / p99 / max
/// of the client's wall time. Opt-in:
///
///     THUMBD_PLACEHOLDER_BENCH=1 swift test -c release -Xswiftc -enable-testing --skip-build --filter ServePlaceholderBench
@Suite(.enabled(if: ProcessInfo.processInfo.environment["THUMBD_PLACEHOLDER_BENCH"] == "1"))
struct ServePlaceholderBench {
    @Test func fiftyKnownAssets() throws {
        let requests = Int(ProcessInfo.processInfo.environment["THUMBD_PLACEHOLDER_REQUESTS"] ?? "") ?? 2000
        let sources = [ServePaths.samples + "/landscape-exif6.jpg", ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
                       ServePaths.samples + "/portrait-exif8.jpg", ServePaths.samples + "/flower-cmyk.jpg"]
        let names = (0..<50).map { "screen/cell-\($0)." + (sources[$0 % sources.count].hasSuffix(".png") ? "png" : "jpg") }
        let daemon = try ServeDaemon(assets: Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, sources[$0 % sources.count]) }))
        try daemon.start()
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["assets": names]), as: UTF8.self)
        _ = try ServePlaceholderTests.ready(daemon, names)
        let request = "POST /v1/placeholders HTTP/1.1\r\nHost: thumbd\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        var seconds: [Double] = []
        for index in 0..<(requests + 100) {
            let start = ContinuousClock.now
            let answer = ServeRaw.exchange(.unix(daemon.socket), request, timeout: 10)
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            #expect(answer.status == 200, "\(answer)")
            if index >= 100 { seconds.append(elapsed) }
        }
        seconds.sort()
        let ready = ServePlaceholderTests.entries(try daemon.request("/v1/placeholders", method: "POST", body: body))
            .values.filter { $0["status"] as? String == "ready" }.count
        print(String(format: "placeholders-bench POST /v1/placeholders, 50 known assets (%d ready), %d requests: p50 %.3f ms, p99 %.3f ms, max %.3f ms",
                     ready, seconds.count, seconds[seconds.count / 2] * 1000, seconds[seconds.count * 99 / 100] * 1000, seconds.last! * 1000))
        #expect(ready == 50)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
