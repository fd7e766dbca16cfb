import Foundation
import Testing

/// The Grafana dashboard and the Prometheus alerting rules (monitoring/) name only metrics the
/// daemon exports: a renamed or dropped metric fails here, not as an empty panel or an alert
/// that can never fire. Labels the rules filter on (`code`, `route`, `status`, …) are checked
/// to appear on their family's samples once the daemon has something to report.
@Suite("monitoring: dashboard and alerts match /metrics")
struct MonitoringContractTests {
    static let folder = ServePaths.packageRoot + "/monitoring"

    /// Every `thumbd_…` name in the file.
    static func referencedMetrics(_ file: String) throws -> Set<String> {
        let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: "thumbd_[a-z0-9_]+")
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        return Set(matches.compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    @Test("every metric the dashboard and the alerts query is exported, with the labels they filter on")
    func referencedMetricsAreExported() throws {
        let daemon = try ServeDaemon(assets: ["ring.png": ServePaths.samples + "/p3-color-ring-alpha.png"])
        try Data("not an image".utf8).write(to: URL(fileURLWithPath: daemon.assets + "/broken.jpg"))
        try daemon.start()
        // Something to report: a render, a failure by its code, hits and misses.
        #expect(try daemon.request("/v1/thumbnails/large/ring.png").status == 200)
        #expect(try daemon.request("/v1/thumbnails/large/ring.png").status == 200)
        #expect(try daemon.request("/v1/thumbnails/large/broken.jpg").status == 415)
        let metrics = try daemon.metrics()
        #expect(daemon.stop() == 0)

        // Families from `# TYPE name kind`; a histogram's samples are name_bucket, _count, _sum.
        var exported: Set<String> = []
        for line in metrics.text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count == 4 else { continue }
            let name = String(parts[2])
            exported.insert(name)
            if parts[3] == "histogram" { exported.formUnion([name + "_bucket", name + "_count", name + "_sum"]) }
        }
        #expect(exported.count > 30, "\(metrics.text)")
        for file in ["grafana-dashboard.json", "thumbd-alerts.yml"] {
            let referenced = try Self.referencedMetrics(file)
            #expect(!referenced.isEmpty, "\(file) names no metric")
            // The stream consumer's families exist only with a "queue": ServeQueueTests checks them.
            let unknown = referenced.filter { !$0.hasPrefix("thumbd_stream_") }.subtracting(exported).sorted()
            #expect(unknown.isEmpty, "\(file) queries metrics /metrics does not export: \(unknown)")
        }
        // The dashboard is JSON Grafana can import (an object with panels).
        let dashboard = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.folder + "/grafana-dashboard.json")))
        #expect(((dashboard as? [String: Any])?["panels"] as? [Any])?.isEmpty == false)
        // The failure a rule selects by its code is labelled so.
        #expect(metrics["thumbd_render_failures_total{code=\"undecodable\"}"] == 1, "\(metrics.text)")
    }
}
