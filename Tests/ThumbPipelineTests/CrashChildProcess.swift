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
    let child: ChildProcess

    /// `mode`: "pipeline" or "disk-cache"; `target`: the folder it writes.
    init(mode: String, target: String) throws {
        child = try ChildProcess(try TestPaths.builtExecutable("thumbd-crash-child"), [mode, target], stderr: .captured)
    }

    /// What it wrote to stderr.
    var log: String { child.stderr }

    /// Waits for `path` to exist; fails if the child ends first or `timeout` passes.
    func waitUntilReady(_ path: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: path) {
            if let ending = child.ending {
                throw TestFailure("the child \(ending) before it was ready: \(log)")
            }
            guard Date() < deadline else { throw TestFailure("the child was not ready within \(timeout) s: \(log)") }
            usleep(2_000)
        }
    }

    /// SIGKILL. Returns how the child ended, and whether it was still running when the signal
    /// was sent (a child that had already trapped or exited was not killed by us).
    func kill() -> (ending: ChildProcess.Ending, wasRunning: Bool) { child.kill() }
}
