import Foundation
package import ThumbBatch
package import ThumbConfiguration
package import ThumbSystem

/// The Redis stream consumer's metric families: in the daemon's `/metrics` (its `"queue"`),
/// and on `thumbd batch --follow --metrics-listen ADDRESS` (`StreamMetricsEndpoint`).
enum StreamMetrics {
    typealias Family = (name: String, type: String, help: String, samples: [(String, Double)])

    static func families(_ queue: RedisQueueCounters.Snapshot) -> [Family] {
        var families: [Family] = [
            ("thumbd_stream_jobs_total", "counter", "Jobs of the \"queue\" stream finished by this consumer, by outcome "
                + "(rendered; failed, each also dead-lettered), and jobs it took over from a consumer that went quiet.",
             [("outcome=\"rendered\"", Double(queue.rendered)), ("outcome=\"failed\"", Double(queue.failed)),
              ("outcome=\"dead_lettered\"", Double(queue.deadLettered)), ("outcome=\"taken_over\"", Double(queue.takenOver))]),
            ("thumbd_stream_reconnects_total", "counter", "Times the connection to Redis was lost (each episode once).",
             [("", Double(queue.reconnects))]),
            ("thumbd_stream_connected", "gauge", "1 while the connection to Redis is up.", [("", queue.connected ? 1 : 0)]),
            ("thumbd_stream_pending", "gauge", "Jobs of the group delivered and not yet acknowledged (every consumer).",
             [("", Double(queue.pending))]),
        ]
        if let lag = queue.lag {
            families.append(("thumbd_stream_lag", "gauge", "Jobs of the stream not yet delivered to the group.", [("", Double(lag))]))
        }
        return families
    }

    /// The Prometheus text of `families`.
    static func text(_ queue: RedisQueueCounters.Snapshot) -> String {
        var lines: [String] = []
        for family in families(queue) {
            lines.append("# HELP \(family.name) \(family.help)")
            lines.append("# TYPE \(family.name) \(family.type)")
            for (labels, value) in family.samples {
                lines.append("\(family.name)\(labels.isEmpty ? "" : "{\(labels)}") \(String(format: "%.0f", value))")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `GET /metrics` of a `thumbd batch --follow` consumer on a loopback address: the stream
/// families, nothing else (every other path is 404). One HTTP thread, a few connections.
package final class StreamMetricsEndpoint: Sendable {
    private let server: HTTPServer

    package init(_ address: ListenAddress, counters: RedisQueueCounters) throws(SystemError) {
        let listener = try Listener.tcp(address)
        server = try HTTPServer(listeners: [listener], threadsPerListener: 1, maxConnections: 16) { request, respond in
            guard request.path == "/metrics", request.method == "GET" || request.method == "HEAD" else {
                return respond(.text(404, "only GET /metrics here\n"))
            }
            respond(.text(200, StreamMetrics.text(counters.snapshot), contentType: "text/plain; version=0.0.4; charset=utf-8"))
        }
    }

    package func stop() { server.stop() }
}
