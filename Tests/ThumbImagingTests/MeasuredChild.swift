import Foundation
import Testing
import ThumbTestSupport

/// A `thumbd` command run under GNU time, so the test sees its peak RSS, CPU and wall time as
/// well as its exit status; one that hangs past the timeout is killed (and reported as such).
enum MeasuredChild {
    struct Result: Sendable {
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

    static func run(_ executable: String, _ arguments: [String], timeout: Double = 20) throws -> Result {
        // Peak RSS comes from GNU time, which forks the child itself: wait4's ru_maxrss of a child
        // spawned straight from this (large) test process would include this process's own peak,
        // which Linux carries into the child across exec.
        let timeTool = "/usr/bin/time"
        guard FileManager.default.isExecutableFile(atPath: timeTool) else {
            throw TestFailure("\(timeTool) is missing: install Debian's 'time' package (scripts/install-deps --test does)")
        }
        let scratch = try ScratchDirectory("measured")
        defer { scratch.remove() }
        let rssPath = scratch.path("rss")
        let start = Date()
        let child = try ChildProcess.run(timeTool, ["-f", "%U %S\n%M", "-o", rssPath, executable] + arguments, timeout: timeout)
        let wall = Date().timeIntervalSince(start)
        // time's report: "Command terminated by signal N" when the child died of a signal, then
        // user and system CPU seconds, then the peak RSS in kilobytes.
        let report = ((try? String(contentsOfFile: rssPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        let rssKilobytes = report.last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let cpu = report.dropLast().last.map { $0.split(separator: " ").compactMap { Double($0) }.reduce(0, +) } ?? 0
        var termSignal = child.signal ?? 0
        if let line = report.first(where: { $0.hasPrefix("Command terminated by signal ") }) {
            termSignal = Int32(line.dropFirst("Command terminated by signal ".count)) ?? termSignal
        }
        return Result(exitCode: termSignal == 0 ? child.exitCode : nil, signal: termSignal == 0 ? nil : termSignal,
                      killedAfterTimeout: child.timedOut, maxRSSBytes: rssKilobytes * 1024,
                      wallSeconds: wall, cpuSeconds: cpu, stdout: child.stdout, stderr: child.stderr)
    }
}

/// The built `thumbd` binary, or a failure saying it is missing.
func requireThumbd() throws -> String {
    try TestPaths.builtExecutable("thumbd")
}

func folderContents(_ path: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
}
