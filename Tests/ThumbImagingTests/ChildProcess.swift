import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Runs a child with posix_spawn and reaps it with wait4, so the test sees its peak RSS, wall
/// time and exit status; a child that hangs past the timeout is killed (and reported as such).
struct ChildResult: Sendable {
    var exitCode: Int32?
    var signal: Int32?
    var killedAfterTimeout: Bool
    var maxRSSBytes: Int
    var wallSeconds: Double
    /// User and system CPU of the child and the children it waited for (its render workers).
    var cpuSeconds: Double
    var stdout: String
    var stderr: String

    var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    var summary: String {
        "exit \(exitCode.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-"), "
            + "\(maxRSSBytes >> 20) MB, \(String(format: "%.2f", wallSeconds)) s, stderr: \(stderr)"
    }
}

enum ChildProcess {
    struct SpawnError: Error, CustomStringConvertible { var description: String }

    static func run(_ executable: String, _ arguments: [String],
                    timeout: Double = 20) throws -> ChildResult {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-child-\(UUID())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outPath = scratch.appendingPathComponent("stdout").path
        let errPath = scratch.appendingPathComponent("stderr").path

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        // Peak RSS comes from GNU time, which forks the child itself: wait4's ru_maxrss of a child
        // spawned straight from this (large) test process would include this process's own peak,
        // which Linux carries into the child across exec.
        let rssPath = scratch.appendingPathComponent("rss").path
        let timeTool = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: timeTool) else {
            throw SpawnError(description: "\(timeTool) is missing: install Debian's 'time' package (scripts/install-deps --test does)")
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([timeTool, "-f", "%U %S\n%M", "-o", rssPath, executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0) // its own group, so a timeout kills the child too
        var pid: pid_t = 0
        let start = Date()
        let spawned = posix_spawn(&pid, timeTool, &actions, &attributes, argv, environ)
        guard spawned == 0 else {
            throw SpawnError(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }

        var status: Int32 = 0
        var killed = false
        while true {
            let reaped = wait4(pid, &status, WNOHANG, nil)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { throw SpawnError(description: "wait4: \(String(cString: strerror(errno)))") }
            if !killed && Date().timeIntervalSince(start) > timeout {
                kill(-pid, SIGKILL)
                killed = true
            }
            usleep(5_000)
        }
        let wall = Date().timeIntervalSince(start)
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        // time's report: "Command terminated by signal N" when the child died of a signal, then
        // user and system CPU seconds, then the peak RSS in kilobytes.
        let report = read(rssPath).split(separator: "\n").map(String.init)
        let rssKilobytes = report.last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let cpu = report.dropLast().last.map { $0.split(separator: " ").compactMap { Double($0) }.reduce(0, +) } ?? 0
        var termSignal = status & 0x7F
        if let line = report.first(where: { $0.hasPrefix("Command terminated by signal ") }) {
            termSignal = Int32(line.dropFirst("Command terminated by signal ".count)) ?? termSignal
        }
        return ChildResult(exitCode: termSignal == 0 ? (status >> 8) & 0xFF : nil,
                           signal: termSignal == 0 ? nil : termSignal,
                           killedAfterTimeout: killed,
                           maxRSSBytes: rssKilobytes * 1024,
                           wallSeconds: wall, cpuSeconds: cpu, stdout: read(outPath), stderr: read(errPath))
    }
}

/// The built `thumbd` binary, or a failure saying it is missing.
func requireThumbd() throws -> String {
    try TestPaths.builtExecutable("thumbd")
}

/// A fresh empty folder, removed by the caller.
func makeTemporaryFolder(_ label: String = "out") throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-test-\(label)-\(UUID())")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

func folderContents(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}
