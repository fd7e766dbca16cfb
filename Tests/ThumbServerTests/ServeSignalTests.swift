import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// SIGHUP reloads the kinds (a broken config is refused, the old kept); SIGTERM under load
/// answers every request, exits 0 and leaves a whole cache. Below: the exit status at start-up.
@Suite("thumbd serve: signals")
struct ServeSignalTests {
    @Test("SIGHUP: a new kind is served; a broken config is refused and the old kinds kept")
    func reloadAddsKindsAndRefusesBrokenConfig() throws {
        let large: [String: Any] = ["width": 256, "height": 256, "mode": "fit"]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: ["large": large]),
                                     assets: ["small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        try daemon.start()
        func kindNames() throws -> [String] {
            let response = try daemon.request("/v1/kinds")
            return (response.json["kinds"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        }
        #expect(try kindNames() == ["large"])
        #expect(try daemon.request("/v1/thumbnails/tiny/small.png").status == 400)

        try daemon.writeConfig(ServeDaemon.config(kinds: ["large": large, "tiny": ["width": 16, "height": 16, "mode": "fill"]]))
        daemon.signal(SIGHUP)
        try servePoll(timeout: 10, "the new kind in /v1/kinds") { try kindNames() == ["large", "tiny"] }
        let tiny = try daemon.request("/v1/thumbnails/tiny/small.png")
        #expect(tiny.status == 200 && ServeImageHeader.size(tiny.body).map { [$0.width, $0.height] } == [16, 16], "\(tiny.summary)")
        #expect(daemon.log.contains("<5>config reloaded: 2 kinds"), "\(daemon.log)")

        try Data(#"{"assets": "assets", "kinds": {"large": {"width": "wide", "height": 10}}}"#.utf8)
            .write(to: URL(fileURLWithPath: daemon.configPath))
        daemon.signal(SIGHUP)
        try daemon.waitForLog("<3>config reload refused")
        let refusal = daemon.log.split(separator: "\n").first { $0.hasPrefix("<3>config reload refused") } ?? ""
        #expect(refusal.contains("kinds.large.width"), "the refusal should name the key: \(refusal)")
        #expect(daemon.isRunning)
        #expect(try kindNames() == ["large", "tiny"])
        #expect(try daemon.request("/v1/thumbnails/tiny/small.png").status == 200)
        #expect(try daemon.request("/healthz").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// One worker renders a slow thumbnail (a 12 MP photo at xx-large@4x: about a second, 1–2 MB)
    /// that 12 requests wait for, while 19 other requests are queued behind it. At SIGTERM the
    /// queued ones get 503 and the running render finishes: its 12 answers go out together,
    /// right before the HTTP server stops.
    @Test("SIGTERM under load: every request answered 200 or 503, exit 0, no temp files, every cached file whole")
    func terminateUnderLoad() throws {
        let photos = try ServePaths.largePhotos()
        let assets = Dictionary(uniqueKeysWithValues: photos.enumerated().map { ("p\($0.offset).jpg", $0.element) })
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1), assets: assets)
        try daemon.start()
        let slow = "/v1/thumbnails/xx-large/p0.jpg?scale=4"
        let waiting = try ServeCurl.startBatch(socket: daemon.socket, Array(repeating: slow, count: 12))
        try daemon.waitForMetrics("the slow render running") { $0["thumbd_running_renders"] == 1 }
        let others = ["xx-large", "x-large", "large"]
            .flatMap { kind in (1..<photos.count).map { "/v1/thumbnails/\(kind)/p\($0).jpg" } }
        let queued = try ServeCurl.startBatch(socket: daemon.socket, Array(others.prefix(19)))
        try daemon.waitForMetrics("all 31 requests in") { metrics in
            metrics["thumbd_cache_misses_total"] + metrics.sum("thumbd_cache_hits_total") >= 31
        }
        let runningAtTerm = try daemon.metrics()["thumbd_running_renders"] == 1
        daemon.signal(SIGTERM)
        let results = try waiting.finish() + queued.finish()
        #expect(daemon.child?.wait(timeout: 30)?.status == 0, "\(daemon.log)")

        for result in results {
            #expect(result.curlExit == 0 && [200, 503].contains(result.status),
                    "no proper answer: \(result) (slow render running at SIGTERM: \(runningAtTerm))\n\(daemon.log)")
            if result.status == 503 { #expect(!result.retryAfter.isEmpty, "503 without Retry-After: \(result)") }
        }
        #expect(!results.contains { $0.path == slow && $0.status == 503 }, "the running render must finish and be served")
        let served = Set(results.filter { $0.status == 200 }.map(\.path)).count
        #expect(results.contains { $0.status == 503 }, "SIGTERM came after all renders? \(results.map(\.status))")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket file is left behind")
        #expect(daemon.log.contains("<5>stopped"), "\(daemon.log)")

        // The cache: no temporary files; the index rows are exactly the files, and each decodes.
        let files = Self.shardFiles(daemon.cache)
        #expect(files.keys.filter { $0.contains(".tmp") }.isEmpty, "temporary files left: \(files.keys.sorted())")
        let rows = try Self.indexRows(daemon.cache + "/index.sqlite")
        #expect(rows == files, "index rows \(rows) vs files \(files)")
        #expect(rows.count >= served, "\(served) served but \(rows.count) cached")
        for (name, size) in files where !name.contains(".tmp") {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: daemon.cache + "/" + name)))
            #expect(bytes.count == size)
            let check = ThumbnailRequest(kind: SlotKind(name: "check", widthPoints: 16, heightPoints: 16), scale: 1)
            #expect(throws: Never.self, "\(name) does not decode") {
                let thumbnail = try Thumbnailer().thumbnail(of: SourceBytes(bytes), request: check)
                #expect(thumbnail.warning == nil, "\(name): \(thumbnail.warning ?? "")")
            }
        }
        // Reopened, the cache finds nothing to repair: every row is kept.
        let reopened = try ThumbnailStore(directory: daemon.cache, byteBudget: 1 << 30)
        #expect(reopened.statistics.entries == rows.count)
    }

    /// Files in the cache's shard folders: "ab/abcd….jpg" → bytes.
    static func shardFiles(_ cache: String) -> [String: Int] {
        var files: [String: Int] = [:]
        let manager = FileManager.default
        for shard in (try? manager.contentsOfDirectory(atPath: cache)) ?? [] where shard.count == 2 {
            for name in (try? manager.contentsOfDirectory(atPath: cache + "/" + shard)) ?? [] {
                let attributes = try? manager.attributesOfItem(atPath: cache + "/" + shard + "/" + name)
                files[shard + "/" + name] = (attributes?[.size] as? NSNumber)?.intValue ?? -1
            }
        }
        return files
    }

    /// The index's entries (file_path → bytes), read with the sqlite3 command-line tool.
    static func indexRows(_ database: String) throws -> [String: Int] {
        let sqlite = try ChildProcess.run("/usr/bin/sqlite3", ["-readonly", database, "SELECT file_path, bytes FROM entries"],
                                          environment: ChildProcess.cleanEnvironment, timeout: 20)
        guard sqlite.exitCode == 0 else { throw TestFailure("sqlite3: \(sqlite.summary)") }
        let output = sqlite.stdout
        var rows: [String: Int] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: "|")
            if fields.count == 2 { rows[String(fields[0])] = Int(fields[1]) }
        }
        return rows
    }
}

/// `thumbd serve` refuses to start with the sysexits code the unit and the operator rely on:
/// 78 for a bad config (the message names the key), 71 when it cannot listen, 73 when the
/// cache cannot be opened.
@Suite("thumbd serve: exit status")
struct ServeExitTests {
    struct BadConfig: Sendable, CustomTestStringConvertible {
        var text: String
        var key: String
        var testDescription: String { key }
    }

    static let badConfigs = [
        BadConfig(text: #"{"assets": "assets", "kinds": {"large": {"width": "wide", "height": 10}}}"#, key: "kinds.large.width"),
        BadConfig(text: #"{"assets": "assets", "kinds": {}, "server": {"maxQueueJobs": 1}}"#, key: "server.maxQueueJobs"),
        BadConfig(text: #"{"assets": "assets", "kinds": {}, "limits": {"maxPixels": 0}}"#, key: "limits.maxPixels"),
        BadConfig(text: #"{"assets": "assets", "kinds": {}, "server": {"listen": "0.0.0.0:80"}}"#, key: "server.listen"),
        BadConfig(text: #"{"assets": "assets"}"#, key: "kinds"),
        BadConfig(text: #"{"assets": "assets", "kinds": {"a": {"width": 4, "height": 4, "mode": "fill", "crop": "face"}}}"#,
                  key: "kinds.a.crop"),
    ]

    /// Starts the daemon and waits for it to give up.
    func exitStatus(_ daemon: ServeDaemon, arguments: [String]? = nil) throws -> Int32? {
        try daemon.start(arguments: arguments, waitForReady: false)
        return daemon.child?.wait(timeout: 15)?.status
    }

    @Test("a bad config: exit 78 and stderr names the key", arguments: badConfigs)
    func badConfigExits78(_ bad: BadConfig) throws {
        let daemon = try ServeDaemon()
        try Data(bad.text.utf8).write(to: URL(fileURLWithPath: daemon.configPath))
        #expect(try exitStatus(daemon) == 78, "\(daemon.log)")
        let errors = daemon.log.split(separator: "\n").filter { $0.hasPrefix("<3>") }
        #expect(errors.contains { $0.contains("'\(bad.key)'") && $0.contains(daemon.configPath) }, "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }

    @Test("a config that is not JSON, or missing: exit 78 naming the file")
    func unreadableConfigExits78() throws {
        let daemon = try ServeDaemon()
        try Data("kinds: [large]".utf8).write(to: URL(fileURLWithPath: daemon.configPath))
        #expect(try exitStatus(daemon) == 78, "\(daemon.log)")
        #expect(daemon.log.contains("<3>bad config: \(daemon.configPath)"), "\(daemon.log)")
        let missing = try ServeDaemon()
        #expect(try exitStatus(missing, arguments: ["--config", missing.directory + "/nope.json"]) == 78, "\(missing.log)")
        #expect(missing.log.contains("nope.json"), "\(missing.log)")
    }

    @Test("a socket path that cannot be bound: exit 71")
    func cannotListenExits71() throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(server: ["socket": "no/such/folder/thumbd.sock"]))
        #expect(try exitStatus(daemon) == 71, "\(daemon.log)")
        #expect(daemon.log.contains("<3>cannot listen"), "\(daemon.log)")
    }

    @Test("a cache folder that is a file: exit 73")
    func cannotOpenCacheExits73() throws {
        let daemon = try ServeDaemon()
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: daemon.cache))
        #expect(try exitStatus(daemon) == 73, "\(daemon.log)")
        #expect(daemon.log.contains("<3>cannot start the pipeline"), "\(daemon.log)")
    }
}
