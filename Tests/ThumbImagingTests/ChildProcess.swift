import Foundation
import Testing
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

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let start = Date()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw SpawnError(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }

        var status: Int32 = 0
        var usage = rusage()
        var killed = false
        while true {
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { throw SpawnError(description: "wait4: \(String(cString: strerror(errno)))") }
            if !killed && Date().timeIntervalSince(start) > timeout {
                kill(pid, SIGKILL)
                killed = true
            }
            usleep(5_000)
        }
        let wall = Date().timeIntervalSince(start)
        let termSignal = status & 0x7F
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        return ChildResult(exitCode: termSignal == 0 ? (status >> 8) & 0xFF : nil,
                           signal: termSignal == 0 ? nil : termSignal,
                           killedAfterTimeout: killed,
                           maxRSSBytes: Int(usage.ru_maxrss) * 1024, // Linux: kilobytes
                           wallSeconds: wall, stdout: read(outPath), stderr: read(errPath))
    }
}

/// The built `thumbd` binary, or a recorded failure saying it is missing.
func requireThumbd() throws -> String {
    try #require(Paths.thumbdBinary,
                 "no thumbd binary under \(Paths.packageRoot)/.build/{debug,release}: run `swift build` before `swift test`")
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
