import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd serve` with `"spool"` in its config: the daemon drains the spool folder through its own
/// pipeline, sleeping until a job lands in `incoming/` (`SpoolDoorbell`; it looks on its own only
/// every 30 s), and a stop ends the idle consumer at once.
@Suite("thumbd serve: the spool consumer")
struct ServeSpoolTests {
    /// A producer's job: written under a temporary name, then renamed into `incoming/`.
    static func submit(_ job: String, name: String, spool: String) throws {
        let temporary = spool + "/incoming/." + name + ".tmp"
        try Data(job.utf8).write(to: URL(fileURLWithPath: temporary))
        try FileManager.default.moveItem(atPath: temporary, toPath: spool + "/incoming/" + name)
    }

    static func names(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test("jobs that land while the daemon idles are rendered within seconds, not at its 30-s rescan; a bad job fails alone; then it stops cleanly")
    func jobsLandingWhileIdleAreRendered() throws {
        let photos = try ServePaths.largePhotos()
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1, extra: ["spool": "spool"]),
                                     assets: ["a.jpg": photos[0], "b.jpg": photos[1]])
        try daemon.start()
        let spool = daemon.directory + "/spool"
        // The consumer made the folder and drained it empty; from here on it sleeps.
        try servePoll(timeout: 15, "the spool's folders") { FileManager.default.fileExists(atPath: spool + "/failed") }

        try Self.submit(#"{"asset": "a.jpg", "kinds": ["large"]}"#, name: "1-a.json", spool: spool)
        try servePoll(timeout: 20, "1-a.json in done/ (\(Self.names(spool + "/incoming")) still incoming)\n\(daemon.log)") {
            Self.names(spool + "/done") == ["1-a.json"]
        }
        // A second job, well after the first drain: only the doorbell can start it within 20 s.
        try Self.submit(#"{"asset": "b.jpg", "kinds": ["large", "normal"]}"#, name: "2-b.json", spool: spool)
        try Self.submit(#"{"asset": "missing.jpg", "kinds": ["large"]}"#, name: "3-missing.json", spool: spool)
        try servePoll(timeout: 20, "2-b.json in done/ and 3-missing.json in failed/\n\(daemon.log)") {
            Self.names(spool + "/done") == ["1-a.json", "2-b.json"] && Self.names(spool + "/failed").contains("3-missing.json")
        }
        let reason = (try? String(contentsOfFile: spool + "/failed/3-missing.json.reason", encoding: .utf8)) ?? ""
        #expect(reason.contains("missing.jpg"), "\(reason)")
        #expect(Self.names(spool + "/incoming").isEmpty && Self.names(spool + "/claimed").isEmpty)

        // What the jobs rendered is served from the cache: asking renders nothing more.
        let rendered = try daemon.metrics().sum("thumbd_render_seconds_count")
        #expect(rendered >= 2, "the spool's renders: \(rendered)")
        for path in ["/v1/thumbnails/large/a.jpg", "/v1/thumbnails/large/b.jpg", "/v1/thumbnails/normal/b.jpg"] {
            let answer = try daemon.request(path)
            #expect(answer.status == 200, "\(path): \(answer.summary)")
        }
        #expect(try daemon.metrics().sum("thumbd_render_seconds_count") == rendered, "a spooled thumbnail was rendered again")

        #expect(daemon.stop() == 0, "\(daemon.log)")
        #expect(daemon.log.contains("<5>stopped"), "\(daemon.log)")
    }
}
