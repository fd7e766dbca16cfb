import Foundation
import Synchronization
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Slow clients (issue 8, item 7): libmicrohttpd's idle timeout restarts with every byte, so
/// 1,030 connections trickling a header byte every few seconds held every slot and locked
/// `/healthz` out on both listeners. Now a request must be whole within a deadline of its
/// connection being ready for it (shorter while a listener is crowded), and one TCP peer holds
/// at most a quarter of the connections.
@Suite("thumbd serve: slow clients", .serialized)
struct ServeSlowClientTests {
    /// The flood: as many connections as the issue's, more than the 1,024 a listener accepts.
    static let floodConnections = 1_030
    static let floodSeconds = 15.0
    /// /healthz must answer within this while the flood goes on (the crowded deadline is 1 s).
    static let healthBoundSeconds = 5.0

    func daemon(tcpPort: UInt16? = nil) throws -> ServeDaemon {
        var server: [String: Any] = [:]
        if let tcpPort { server["listen"] = "127.0.0.1:\(tcpPort)" }
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1, server: server),
                                     assets: ["small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        try daemon.start()
        return daemon
    }

    /// Connections the daemon cut at its normal deadline and at its crowded one.
    static func slowClientsCut(_ endpoint: ServeEndpoint) throws -> (normal: Double, crowded: Double) {
        let answer = get(endpoint, "/metrics", within: 10)
        guard answer.status == 200 else { throw TestFailure("GET /metrics on \(endpoint): \(answer)") }
        let metrics = ServeMetrics(String(decoding: answer.body, as: UTF8.self))
        return (metrics[#"thumbd_http_slow_clients_total{deadline="normal"}"#], metrics[#"thumbd_http_slow_clients_total{deadline="crowded"}"#])
    }

    /// Opens a connection and sends `bytes` one at a time, `interval` apart, while watching for the server closing it.
    /// Returns the seconds until the server closed it, or nil if it was still open after `limit`.
    static func trickle(_ endpoint: ServeEndpoint, prefix: [UInt8] = [], interval: Double, limit: Double) throws -> Double? {
        guard let (descriptor, _) = endpoint.connect() else { throw TestFailure("cannot connect to \(endpoint)") }
        defer { close(descriptor) }
        let start = Date()
        if !prefix.isEmpty {
            // One whole request first: the deadline must restart for the next one, not only at connect.
            _ = prefix.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            guard ServeRaw.wait(descriptor, for: Int16(POLLIN), until: start.addingTimeInterval(10)),
                  recv(descriptor, &buffer, buffer.count, 0) > 0 else { throw TestFailure("no answer to the first request") }
        }
        let header = Array("GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: ".utf8)
        var sent = 0
        while Date().timeIntervalSince(start) < limit {
            var byte = sent < header.count ? header[sent] : UInt8(ascii: "a")
            guard send(descriptor, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else { return Date().timeIntervalSince(start) }
            sent += 1
            var scratch: UInt8 = 0
            if ServeRaw.wait(descriptor, for: Int16(POLLIN), until: Date().addingTimeInterval(interval)) {
                let count = recv(descriptor, &scratch, 1, Int32(MSG_DONTWAIT))
                if count <= 0 && !(count < 0 && errno == EAGAIN) { return Date().timeIntervalSince(start) }
            }
        }
        return nil
    }

    @Test("a request trickled over 3 s is answered; one trickled for ever is cut by the deadline, on a new or a kept-alive connection, and counted")
    func deadlineCutsTricklers() throws {
        let daemon = try daemon()
        let endpoint = ServeEndpoint.unix(daemon.socket)

        // Slow but finite: 12 pieces a quarter second apart is well inside the 10 s deadline.
        guard let (descriptor, _) = endpoint.connect() else { throw TestFailure("cannot connect") }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: slow\r\nConnection: close\r\n\r\n".utf8)
        let pieceBytes = (request.count + 11) / 12
        for piece in stride(from: 0, to: request.count, by: pieceBytes) {
            let chunk = Array(request[piece..<min(piece + pieceBytes, request.count)])
            _ = chunk.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            usleep(250_000)
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ServeRaw.wait(descriptor, for: Int16(POLLIN), until: Date().addingTimeInterval(10)) {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        close(descriptor)
        var slow = ServeRawAnswer()
        ServeRaw.parse(received, into: &slow)
        #expect(slow.status == 200, "a request sent over 3 s was not answered: \(slow)")

        // Endless: one byte a second, on a fresh connection and after a first whole request.
        let fresh = ServeCurl.backgroundTask { try Self.trickle(endpoint, interval: 1, limit: 25) }
        let keptAlive = ServeCurl.backgroundTask {
            try Self.trickle(endpoint, prefix: Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), interval: 1, limit: 25)
        }
        let freshClosed = try fresh.result(timeout: 60)
        let keptAliveClosed = try keptAlive.result(timeout: 60)
        #expect(freshClosed != nil, "a connection trickling a header byte a second was still open after 25 s")
        #expect(keptAliveClosed != nil, "a kept-alive connection trickling its next request was still open after 25 s")
        // Counted by the server after it closed them: the client may see the close first.
        #expect(throws: Never.self, "the cut connections are not counted") {
            try servePoll(timeout: 5, "two cut connections counted") { try Self.slowClientsCut(endpoint).normal >= 2 }
        }
        #expect(try daemon.request("/healthz").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// A GET answered within `seconds` in all. A Unix socket whose listen backlog is full refuses
    /// a connect at once (EAGAIN) where TCP would queue it, so the client tries again, as any
    /// health checker would, within the same bound.
    static func get(_ endpoint: ServeEndpoint, _ path: String, within seconds: Double) -> ServeRawAnswer {
        let start = Date()
        var answer = ServeRaw.get(endpoint, path, timeout: seconds)
        while answer.status == 0, case let left = seconds - Date().timeIntervalSince(start), left > 0.1 {
            usleep(50_000)
            answer = ServeRaw.get(endpoint, path, timeout: left)
        }
        return answer
    }

    /// Probes /healthz on a fresh connection every half second while `flood` runs (and samples
    /// the open connections when `sampled`); returns the answers.
    /// `metricsFrom`: where /metrics is sampled (an operator's endpoint: the Unix socket).
    static func probeHealth(_ endpoint: ServeEndpoint, during flood: ServeSlowClientFlood, metricsFrom: ServeEndpoint? = nil,
                            connectionsSeen: inout [Double]) -> [ServeRawAnswer] {
        var answers: [ServeRawAnswer] = []
        let end = Date().addingTimeInterval(flood.durationSeconds - 1)
        while Date() < end {
            answers.append(get(endpoint, "/healthz", within: healthBoundSeconds))
            if let metricsFrom {
                let sample = get(metricsFrom, "/metrics", within: healthBoundSeconds)
                if sample.status == 200 {
                    connectionsSeen.append(ServeMetrics(String(decoding: sample.body, as: UTF8.self))["thumbd_http_connections"])
                }
            }
            usleep(500_000)
        }
        return answers
    }

    @Test("1,030 clients trickling header bytes on the Unix socket: /healthz keeps answering within 5 s, the slow ones are cut and counted")
    func unixFloodKeepsHealthAnswering() throws {
        try serveRaiseDescriptorLimit(to: 8192)
        let daemon = try daemon()
        let endpoint = ServeEndpoint.unix(daemon.socket)
        let flood = ServeSlowClientFlood(endpoint, connections: Self.floodConnections, byteIntervalSeconds: 2,
                                         reconnectDelaySeconds: 0.5, durationSeconds: Self.floodSeconds)
        flood.start()
        usleep(1_000_000) // the flood holds every slot by now
        var unused: [Double] = []
        let answers = Self.probeHealth(endpoint, during: flood, connectionsSeen: &unused)
        let report = flood.finish()

        #expect(answers.count >= 4, "too few probes: \(answers)")
        for answer in answers {
            #expect(answer.status == 200, "/healthz during the flood (\(report)): \(answer)")
        }
        // The flood was real: it crowded the listener (¾ of its 1,024 connections) again and again,
        // and the crowded deadline cut it each time.
        let counted = try Self.slowClientsCut(endpoint)
        #expect(counted.crowded >= Double(Self.floodConnections), "the flood never crowded the listener: \(counted) (\(report))")
        #expect(report.cutAfterHolding >= Self.floodConnections, "\(report)")
        #expect(counted.normal + counted.crowded >= Double(report.cutAfterHolding) * 0.9,
                "metrics count \(counted) cuts, the flood saw \(report)")
        #expect(try daemon.request("/healthz").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("1,030 clients trickling header bytes from one TCP peer: it holds at most its cap, another peer's /healthz keeps answering within 5 s")
    func tcpFloodFromOnePeerLeavesRoomForOthers() throws {
        try serveRaiseDescriptorLimit(to: 8192)
        let port = try ServeEndpoint.freePort()
        let daemon = try daemon(tcpPort: port)
        let attacker = ServeEndpoint.tcp(port: port, source: "127.0.0.1")
        let neighbour = ServeEndpoint.tcp(port: port, source: "127.0.0.2")
        // Refused connections come back after 2 s: enough pressure without filling the port range.
        let flood = ServeSlowClientFlood(attacker, connections: Self.floodConnections, byteIntervalSeconds: 2,
                                         reconnectDelaySeconds: 2, durationSeconds: Self.floodSeconds)
        flood.start()
        usleep(1_000_000)
        var connectionsSeen: [Double] = []
        // /metrics is the operator's: sampled over the Unix socket, which the flood does not touch.
        let operatorSocket = ServeEndpoint.unix(daemon.socket)
        let answers = Self.probeHealth(neighbour, during: flood, metricsFrom: operatorSocket, connectionsSeen: &connectionsSeen)
        let report = flood.finish()

        #expect(answers.count >= 4, "too few probes: \(answers)")
        for answer in answers {
            #expect(answer.status == 200, "/healthz from 127.0.0.2 during the flood from 127.0.0.1 (\(report)): \(answer)")
        }
        // A quarter of the default 1,024 per peer, plus the probe's own connection.
        let most = connectionsSeen.max() ?? 0
        #expect(most <= 256 + 2, "one peer held \(most) connections: \(connectionsSeen)")
        #expect(most >= 200, "the flood never took its share: \(connectionsSeen) (\(report))")
        #expect(report.closedAtOnce > 0, "nothing over the cap was refused: \(report)")
        // One peer at ¾ of its cap is crowded: its tricklers are cut at the short deadline, not
        // after the relaxed one (the listener's own limit, 1,024, is never near).
        let cuts = try Self.slowClientsCut(operatorSocket)
        #expect(cuts.crowded >= 256, "the held connections were not cut at the crowded deadline: \(cuts) (\(report))")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}

extension ServeCurl {
    /// Any throwing work on another thread; `result()` waits for it.
    static func backgroundTask<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) -> ServeTask<Value> {
        let task = ServeTask<Value>()
        DispatchQueue.global().async {
            let result = Result { try work() }
            task.box.withLock { $0 = result }
            task.done.signal()
        }
        return task
    }
}

/// The outcome of work on another thread.
final class ServeTask<Value: Sendable>: Sendable {
    let box = Mutex<Result<Value, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func result(timeout: Double) throws -> Value {
        guard done.wait(timeout: .now() + timeout) == .success, let result = box.withLock({ $0 }) else {
            throw TestFailure("no result within \(timeout) s")
        }
        return try result.get()
    }
}
