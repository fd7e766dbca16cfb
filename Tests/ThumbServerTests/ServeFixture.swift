import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
import CThumbWorker
#endif

/// Shared by the `thumbd serve` tests: the built binary, test images, child processes and a
/// daemon on a temporary folder (assets/, cache/, thumbd.sock, thumbd.json, stderr.log).

typealias ServeFailure = TestFailure

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
        guard names.count >= 8 else { throw ServeFailure("expected the corpus's large-photos in \(folder)") }
        return names.map { folder + "/" + $0 }
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func servePoll(timeout: Double, _ what: String, _ condition: () throws -> Bool) throws {
    guard try poll(timeout: .seconds(timeout), condition) else {
        throw ServeFailure("timed out after \(timeout) s waiting for \(what)")
    }
}

/// A child started with posix_spawn, reaped by pid only. Killed (SIGKILL) if dropped while running.
final class ServeChild: @unchecked Sendable {
    let pid: pid_t
    private(set) var exitCode: Int32?

    /// `fd3`: a descriptor the child gets as fd 3 (socket activation).
    init(_ argv: [String], environment: [String: String], stdout: String, stderr: String, fd3: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let fd3 { posix_spawn_file_actions_adddup2(&actions, fd3, 3) } // dup2 clears FD_CLOEXEC on 3
        // Nothing else of this process: a file another test has open for writing while this
        // child starts (FileManager's copy opens without O_CLOEXEC) would otherwise stay open in
        // the daemon, and its close when the daemon exits is an IN_CLOSE_WRITE that another
        // daemon's watcher takes for an edit of that file.
        let closing = CThumb_SpawnAddCloseFrom(&actions, fd3 == nil ? 3 : 4)
        guard closing == 0 else { throw ServeFailure("posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(closing)))") }
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let env: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (args + env).forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, argv[0], &actions, nil, args, env)
        guard status == 0 else { throw ServeFailure("cannot run \(argv[0]): \(String(cString: strerror(status)))") }
        pid = child
    }

    deinit {
        if exitCode == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// Reaps the child if it has exited (exit code, or 128 + signal).
    @discardableResult
    func poll() -> Bool {
        if exitCode != nil { return true }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return false }
        let signal = status & 0x7f
        exitCode = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        return true
    }

    /// The exit code, or nil if it still runs after `timeout` seconds.
    func wait(timeout: Double) -> Int32? {
        try? servePoll(timeout: timeout, "pid \(pid) to exit") { poll() }
        return exitCode
    }

    func signal(_ signal: Int32) { if !poll() { kill(pid, signal) } }

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
    let directory: String
    var assets: String { directory + "/assets" }
    var cache: String { directory + "/cache" }
    var socket: String { directory + "/thumbd.sock" }
    var configPath: String { directory + "/thumbd.json" }
    var logPath: String { directory + "/stderr.log" }
    private(set) var child: ServeChild?

    /// Kinds like Samples/thumbd.json's, none pre-generated (so only requests render).
    static var kinds: [String: Any] { [
        "contact-avatar": ["width": 48, "height": 48, "scales": [2, 3], "mode": "fill", "mask": "circle"],
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
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-serve-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/assets", withIntermediateDirectories: true)
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
        try? FileManager.default.removeItem(atPath: directory)
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
        child = try ServeChild(argv, environment: ServeChild.cleanEnvironment.merging(environment) { _, new in new },
                               stdout: directory + "/stdout.log", stderr: logPath, fd3: fd3)
        if waitForReady { try waitForLog("<5>thumbd serving") }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func waitForLog(_ text: String, timeout: Double = 15) throws {
        try servePoll(timeout: timeout, "'\(text)' in the daemon's log:\n\(log)") {
            if log.contains(text) { return true }
            if let child, child.poll() { throw ServeFailure("thumbd exited \(child.exitCode ?? -1):\n\(log)") }
            return false
        }
    }

    var isRunning: Bool { child.map { !$0.poll() } ?? false }

    func signal(_ signal: Int32) { child?.signal(signal) }

    /// The exit code of a daemon that ends by itself (nil: still running after `timeout`).
    func waitForExit(timeout: Double = 20) -> Int32? { child?.wait(timeout: timeout) }

    /// SIGTERM, then the exit code (nil: still running after `timeout`).
    func stop(timeout: Double = 20) -> Int32? {
        child?.signal(SIGTERM)
        return child?.wait(timeout: timeout)
    }

    func request(_ path: String, method: String = "GET", headers: [String] = [], body: String? = nil,
                 timeout: Double = 30) throws -> ServeResponse {
        try ServeCurl.request(socket: socket, path, method: method, headers: headers, body: body, timeout: timeout)
    }

    func metrics() throws -> ServeMetrics {
        let response = try request("/metrics")
        guard response.status == 200 else { throw ServeFailure("GET /metrics: \(response.status) \(response.text)") }
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
            throw ServeFailure("\(error); last metrics:\n\(last.text)")
        }
    }
}
