import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Shared by the `thumbd serve` tests: the built binary, test images, the environment of child
/// processes and a daemon on a temporary folder (assets/, cache/, thumbd.sock, thumbd.json, stderr.log).

enum ServePaths {
    static let packageRoot = TestPaths.packageRoot
    static let corpus = TestPaths.corpus
    static let samples = packageRoot + "/Samples/assets"

    /// The thumbd binary of this build: beside the test bundle first, then .build/release or debug.
    static func thumbd() throws -> String {
        try TestPaths.builtExecutable("thumbd")
    }

    /// The 8–12 MP camera JPEGs of the corpus (each takes 0.1–0.3 s to render at xx-large).
    static func largePhotos() throws -> [String] {
        let folder = corpus + "/large-photos"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".jpg") }.sorted()
        guard names.count >= 8 else { throw TestFailure("expected the corpus's large-photos in \(folder)") }
        return names.map { folder + "/" + $0 }
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func servePoll(timeout: Double, _ what: String, _ condition: () throws -> Bool) throws {
    guard try poll(timeout: .seconds(timeout), condition) else {
        throw TestFailure("timed out after \(timeout) s waiting for \(what)")
    }
}

extension ChildProcess {
    /// The environment of this test process without anything a service manager may have set.
    static var cleanEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
                     "RUNTIME_DIRECTORY", "CACHE_DIRECTORY"] { environment[name] = nil }
        return environment
    }
}

/// `thumbd serve` on a temporary folder, with a config the test writes.
final class ServeDaemon: @unchecked Sendable {
    private let scratch: ScratchDirectory
    var directory: String { scratch.path }
    var assets: String { directory + "/assets" }
    var cache: String { directory + "/cache" }
    var socket: String { directory + "/thumbd.sock" }
    var configPath: String { directory + "/thumbd.json" }
    var logPath: String { directory + "/stderr.log" }
    private(set) var child: ChildProcess?

    /// Kinds like Samples/thumbd.json's, none pre-generated (so only requests render); the avatar
    /// cropped at the centre, as the tests that compare its crop expect (attention is the default
    /// of masked kinds: CropConfigTests).
    static var kinds: [String: Any] { [
        "contact-avatar": ["width": 48, "height": 48, "scales": [2, 3], "mode": "fill", "mask": "circle", "crop": "centre"],
        "normal": ["width": 128, "height": 128, "mode": "fit"],
        "large": ["width": 256, "height": 256, "mode": "fit"],
        "x-large": ["width": 512, "height": 512, "mode": "fit"],
        "xx-large": ["width": 1024, "height": 1024, "mode": "fit"],
    ] }

    /// A config for this folder; `server` and `extra` keys are merged in.
    static func config(workers: Int = 2, kinds: [String: Any] = kinds, server: [String: Any] = [:],
                       extra: [String: Any] = [:]) -> [String: Any] {
        var config: [String: Any] = ["assets": "assets", "kinds": kinds, "workers": workers,
                                     "cache": ["directory": "cache"],
                                     "server": server.merging(["socket": "thumbd.sock"]) { old, _ in old }]
        config.merge(extra) { _, new in new }
        return config
    }

    /// `assets`: name in the asset folder → file to copy there.
    init(config: [String: Any] = ServeDaemon.config(), assets: [String: String] = [:]) throws {
        scratch = try ScratchDirectory("serve")
        try FileManager.default.createDirectory(atPath: scratch.path("assets"), withIntermediateDirectories: true)
        for (name, source) in assets {
            let target = self.assets + "/" + name
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: source, toPath: target)
        }
        try writeConfig(config)
    }

    deinit {
        child = nil // SIGKILL if a test failed before stopping it
        scratch.remove()
    }

    func writeConfig(_ config: [String: Any]) throws {
        try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys])
            .write(to: URL(fileURLWithPath: configPath))
    }

    /// Starts the daemon and, unless told otherwise, waits for its "serving" line.
    /// `listenPID`: LISTEN_PID (and WATCHDOG_PID) are set to the daemon's own pid, as systemd does.
    func start(arguments: [String]? = nil, environment: [String: String] = [:], fd3: Int32? = nil,
               listenPID: Bool = false, waitForReady: Bool = true) throws {
        var argv = [try ServePaths.thumbd(), "serve"] + (arguments ?? ["--config", configPath])
        if listenPID {
            argv = ["/bin/sh", "-c", #"export LISTEN_PID=$$ WATCHDOG_PID=$$; exec "$0" "$@""#] + argv
        }
        child = try ChildProcess(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment.merging(environment) { _, new in new },
                                 stdout: .file(directory + "/stdout.log"), stderr: .file(logPath), fd3: fd3)
        if waitForReady { try waitForLog("<5>thumbd serving") }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func waitForLog(_ text: String, timeout: Double = 15) throws {
        try servePoll(timeout: timeout, "'\(text)' in the daemon's log:\n\(log)") {
            if log.contains(text) { return true }
            if let child, let ending = child.ending { throw TestFailure("thumbd \(ending):\n\(log)") }
            return false
        }
    }

    var isRunning: Bool { child?.isRunning ?? false }

    func signal(_ signal: Int32) { child?.signal(signal) }

    /// The exit code of a daemon that ends by itself (nil: still running after `timeout`).
    func waitForExit(timeout: Double = 20) -> Int32? { child?.wait(timeout: timeout)?.status }

    /// SIGTERM, then the exit code (nil: still running after `timeout`).
    func stop(timeout: Double = 20) -> Int32? {
        child?.signal(SIGTERM)
        return child?.wait(timeout: timeout)?.status
    }

    func request(_ path: String, method: String = "GET", headers: [String] = [], body: String? = nil,
                 timeout: Double = 30) throws -> ServeResponse {
        try ServeCurl.request(socket: socket, path, method: method, headers: headers, body: body, timeout: timeout)
    }

    func metrics() throws -> ServeMetrics {
        let response = try request("/metrics")
        guard response.status == 200 else { throw TestFailure("GET /metrics: \(response.status) \(response.text)") }
        return ServeMetrics(response.text)
    }

    /// Polls /metrics until `condition` holds.
    func waitForMetrics(_ what: String, timeout: Double = 15, _ condition: (ServeMetrics) -> Bool) throws {
        var last = ServeMetrics("")
        do {
            try servePoll(timeout: timeout, what) {
                last = try metrics()
                return condition(last)
            }
        } catch {
            throw TestFailure("\(error); last metrics:\n\(last.text)")
        }
    }
}
