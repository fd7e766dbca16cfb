import Foundation
import Testing
@testable import ThumbServer

/// `thumbd serve --log-format json`: every line on stderr (the daemon's; its render workers get the format too)
/// is one JSON object with time, priority, level and message; `text` keeps the `<N>` prefix.
@Suite("thumbd serve: log format")
struct ServeLogFormatTests {
    @Test("a JSON line carries the whole message, escaped, and parses back to it")
    func jsonLineRoundTrip() throws {
        let message = "a \"quoted\" path\\name,\nnext line\ttab \u{1} bell é"
        let line = Log.line(.warning, message, format: .json)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == message)
        #expect(object["priority"] as? Int == 4 && object["level"] as? String == "warning")
        let time = try #require(object["time"] as? String)
        #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil, "\(time)")
        #expect(Log.line(.notice, "two\nlines", format: .text) == "<5>two lines\n")
    }

    @Test("a text line escapes CR, ESC and every other control character (issue 23, finding 6)")
    func textLineEscapesControls() {
        let forged = Log.line(.info, "rendered x\r<0>EMERGENCY.jpg for \u{1b}[2J client\u{9b}1m\u{7f}", format: .text)
        #expect(forged == "<6>rendered x\\x0d<0>EMERGENCY.jpg for \\x1b[2J client\\x9b1m\\x7f\n", "\(forged)")
        #expect(!forged.unicodeScalars.dropLast().contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        // Text without control characters is left as it is.
        #expect(Log.line(.info, "photos/été.jpg", format: .text) == "<6>photos/été.jpg\n")
    }

    @Test("a daemon started with --log-format json writes only JSON lines")
    func daemonWritesJSONLines() throws {
        let daemon = try ServeDaemon(assets: ["ring.png": ServePaths.samples + "/p3-color-ring-alpha.png"])
        // A file that is not an image: the render fails and the daemon logs about it.
        try Data("not an image at all".utf8).write(to: URL(fileURLWithPath: daemon.assets + "/broken.jpg"))
        try daemon.start(arguments: ["--config", daemon.configPath, "--log-format", "json"], waitForReady: false)
        try daemon.waitForLog(#""message":"thumbd serving"#)
        #expect(try daemon.request("/v1/thumbnails/large/ring.png?client=app-1&slot=cell-7").status == 200)
        #expect(try daemon.request("/v1/thumbnails/large/broken.jpg").status == 415)
        #expect(daemon.stop() == 0, "\(daemon.log)")
        let lines = daemon.log.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count >= 3, "\(daemon.log)")
        var levels: Set<String> = []
        var events: [String: String] = [:]
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            guard let object else { continue }
            let keys = Set(object.keys)
            #expect(keys.isSuperset(of: ["time", "priority", "level", "message"])
                    && keys.isSubset(of: ["time", "priority", "level", "message", "asset", "kind", "client", "event"]), "\(line)")
            if let level = object["level"] as? String { levels.insert(level) }
            if let asset = object["asset"] as? String, let event = object["event"] as? String {
                events[asset] = event
                #expect(object["kind"] as? String == "large@1x", "\(line)")
                // The slot's client waited for the ring's render; nobody's slot for the broken file.
                #expect(object["client"] as? String == (asset == "ring.png" ? "app-1" : nil), "\(line)")
            }
        }
        #expect(levels.isSubset(of: ["error", "warning", "notice", "info", "debug"]) && levels.contains("notice"), "\(levels)")
        // Each render is an event about its asset and kind.
        #expect(events == ["ring.png": "rendered", "broken.jpg": "render-failed"], "\(events)")
    }

    @Test("an unknown --log-format is a usage error (64), named")
    func unknownFormatIsUsageError() throws {
        let daemon = try ServeDaemon()
        try daemon.start(arguments: ["--config", daemon.configPath, "--log-format", "yaml"], waitForReady: false)
        #expect(daemon.waitForExit() == 64)
        #expect(daemon.log.contains("--log-format takes text, json or journal"), "\(daemon.log)")
    }
}
