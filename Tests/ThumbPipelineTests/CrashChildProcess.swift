import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd-crash-child` (Tests/CrashChild) run by a crash test: started, awaited until its ready
/// file exists, then killed with SIGKILL. How it ended is read from waitpid, so a child that
/// trapped (SIGILL, SIGTRAP), exited or died of anything else is told apart from one we killed.
final class CrashChildProcess {
    typealias Failure = TestFailure

    /// How the child ended.
    enum Ending: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "died of signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    let pid: pid_t
    let logPath: String
    private var ending: Ending?

    static func executable() throws -> String {
        try TestPaths.builtExecutable("thumbd-crash-child")
    }

    /// `mode`: "pipeline" or "disk-cache"; `target`: the folder it writes.
    init(mode: String, target: String) throws {
        let executable = try Self.executable()
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-crash-child-\(UUID().uuidString).log").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = [executable, mode, target].map { (argument: String) in strdup(argument) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, nil, argv, environ)
        guard status == 0 else { throw Failure("cannot run \(executable): \(String(cString: strerror(status)))") }
        pid = child
    }

    deinit {
        if ending == nil {
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        try? FileManager.default.removeItem(atPath: logPath)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Reaps the child if it has ended.
    private func reap(blocking: Bool) -> Ending? {
        if let ending { return ending }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        guard reaped == pid else { return nil }
        let signal = status & 0x7f
        ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
        return ending
    }

    /// Waits for `path` to exist; fails if the child ends first or `timeout` passes.
    func waitUntilReady(_ path: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: path) {
            if let ending = reap(blocking: false) {
                throw Failure("the child \(ending) before it was ready: \(log)")
            }
            guard Date() < deadline else { throw Failure("the child was not ready within \(timeout) s: \(log)") }
            usleep(2_000)
        }
    }

    /// SIGKILL. Returns how the child ended, and whether it was still running when the signal
    /// was sent (a child that had already trapped or exited was not killed by us).
    func kill() -> (ending: Ending, wasRunning: Bool) {
        let wasRunning = reap(blocking: false) == nil
        if wasRunning { Glibc.kill(pid, SIGKILL) }
        return (reap(blocking: true) ?? .exited(-1), wasRunning)
    }
}
