import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import CThumbWorker

/// A child process of a test: `ChildProcess.run` for a command run to its end, the initializer
/// for one that runs beside the test (a daemon, a consumer, a writer to kill) and is handled by
/// pid. Every child is spawned with posix_spawn into its own process group, with nothing of this
/// process open but its standard streams (and `fd3` when given); its output goes to files, so
/// no pipe can fill up and stall it. It is reaped by pid only (waitpid), so how it ended (exit
/// status or signal) is exact. A child still running when its handle goes away is SIGKILLed with
/// its process group, and a `run` or `end(within:)` past its timeout kills it the same way.
public final class ChildProcess: @unchecked Sendable {
    /// How a child ended, as waitpid told.
    public enum Ending: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or 128 + the signal (as a shell's `$?`).
        public var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }

        public var description: String {
            switch self {
            case .exited(let status): "exited with status \(status)"
            case .signalled(let signal): "died of signal \(signal) (\(String(cString: strsignal(signal))))"
            }
        }
    }

    /// Where standard input comes from.
    public enum Input: Sendable {
        case null
        /// An existing file, read from its start.
        case file(String)
        /// These bytes (through a file removed once the child has it open).
        case text(String)
    }

    /// Where standard output or standard error goes.
    public enum Output: Sendable, Equatable {
        case null
        /// This file, created or truncated (stdout and stderr given the same file share it).
        case file(String)
        /// A file of the child's own, read with `stdout`/`stderr` and removed with the handle.
        case captured
    }

    /// What a child run to its end left.
    public struct Result: Sendable {
        public var command: String
        public var pid: pid_t
        public var ending: Ending
        /// It was still running at the timeout and was killed (SIGKILL, with its process group).
        public var timedOut: Bool
        public var stdoutData: Data
        public var stderrData: Data

        public var exitCode: Int32? { if case .exited(let status) = ending { status } else { nil } }
        public var signal: Int32? { if case .signalled(let signal) = ending { signal } else { nil } }
        /// The exit status, or 128 + the signal.
        public var status: Int32 { ending.status }
        public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
        public var stderr: String { String(decoding: stderrData, as: UTF8.self) }
        public var summary: String {
            "\(command): \(ending)\(timedOut ? " (killed at the timeout)" : "")\nstdout: \(stdout.prefix(4000))\nstderr: \(stderr.prefix(4000))"
        }
    }

    public let pid: pid_t
    /// The command line, for messages.
    public let command: String
    private let stdoutPath: String?
    private let stderrPath: String?
    private let captures: ScratchDirectory?
    private let reaped = Mutex<Ending?>(nil)

    /// Starts `executable` (a path) with `arguments`. `environment`: the child's whole
    /// environment (nil: this process's own); `fd3`: a descriptor the child gets as its fd 3
    /// (socket activation).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Input = .null,
                stdout: Output = .null, stderr: Output = .null, fd3: Int32? = nil) throws(TestFailure) {
        command = ([executable] + arguments).joined(separator: " ")
        let captures = stdout == .captured || stderr == .captured ? try ScratchDirectory("child") : nil
        func path(_ output: Output, _ name: String) -> String? {
            switch output {
            case .null: nil
            case .file(let path): path
            case .captured: captures?.path(name)
            }
        }
        let (stdoutPath, stderrPath) = (path(stdout, "stdout"), path(stderr, "stderr"))
        (self.captures, self.stdoutPath, self.stderrPath) = (captures, stdoutPath, stderrPath)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var inputFile: String?
        switch stdin {
        case .null: inputFile = nil
        case .file(let path): inputFile = path
        case .text(let text):
            let path = NSTemporaryDirectory() + "/thumbd-stdin-\(UUID().uuidString)"
            do { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) } catch {
                throw TestFailure("cannot write the standard input of \(executable) to \(path): \(error)")
            }
            inputFile = path
        }
        // The child has it open once posix_spawn returns (glibc runs the file actions before it does).
        defer { if case .text = stdin, let inputFile { try? FileManager.default.removeItem(atPath: inputFile) } }
        posix_spawn_file_actions_addopen(&actions, 0, inputFile ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let stderrPath, stderrPath == stdoutPath {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        if let fd3 { posix_spawn_file_actions_adddup2(&actions, fd3, 3) } // dup2 clears FD_CLOEXEC on 3
        // Nothing else of this process: a file another test has open for writing while this child
        // starts (FileManager's copy opens without O_CLOEXEC) would otherwise stay open in the child,
        // and its close when the child exits is an IN_CLOSE_WRITE that a daemon's watcher takes for
        // an edit of that file.
        let closing = CThumb_SpawnAddCloseFrom(&actions, fd3 == nil ? 3 : 4)
        guard closing == 0 else { throw TestFailure("posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(closing)))") }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, so that a timeout kills what it started too.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { (argv + (envp ?? [])).forEach { free($0) } }
        var child: pid_t = 0
        let status = envp.map { posix_spawn(&child, executable, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard status == 0 else { throw TestFailure("cannot run \(executable): \(String(cString: strerror(status)))") }
        pid = child
    }

    deinit {
        reaped.withLock { ending in
            guard ending == nil else { return }
            Glibc.kill(-pid, SIGKILL)
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// Runs `executable` to its end (SIGKILLed with its process group after `timeout` seconds),
    /// its output captured.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           stdin: Input = .null, timeout: Double = 60) throws(TestFailure) -> Result {
        try ChildProcess(executable, arguments, environment: environment, stdin: stdin, stdout: .captured, stderr: .captured)
            .end(within: timeout)
    }

    /// How it ended, once it has (reaping it then); nil while it runs.
    public var ending: Ending? {
        reaped.withLock { ending in
            if let ending { return ending }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            let signal = status & 0x7f
            ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            return ending
        }
    }

    public var isRunning: Bool { ending == nil }

    /// Waits at most `timeout` seconds for it to end; nil if it still runs then (it is left running).
    @discardableResult
    public func wait(timeout: Double) -> Ending? {
        _ = poll(timeout: .milliseconds(Int64(timeout * 1000)), interval: .milliseconds(5)) { ending != nil }
        return ending
    }

    /// Waits at most `timeout` seconds for it to end, then SIGKILLs it with its process group;
    /// how it ended and what it wrote.
    @discardableResult
    public func end(within timeout: Double) -> Result {
        var timedOut = false
        if wait(timeout: timeout) == nil {
            timedOut = true
            reaped.withLock { ending in if ending == nil { Glibc.kill(-pid, SIGKILL) } }
        }
        let ending = wait(timeout: 60) ?? .signalled(SIGKILL)
        return Result(command: command, pid: pid, ending: ending, timedOut: timedOut, stdoutData: stdoutData, stderrData: stderrData)
    }

    /// Sends `signal` to the child alone, unless it has already ended.
    public func signal(_ signal: Int32) {
        reaped.withLock { ending in if ending == nil { _ = Glibc.kill(pid, signal) } }
    }

    /// SIGKILL now, then how it ended and whether it was still running when the signal was sent
    /// (one that had already exited or trapped was not killed by us).
    @discardableResult
    public func kill() -> (ending: Ending, wasRunning: Bool) {
        let wasRunning = ending == nil
        signal(SIGKILL)
        return (wait(timeout: 60) ?? .signalled(SIGKILL), wasRunning)
    }

    /// What it has written so far to a `.file` or `.captured` stdout or stderr (empty for `.null`).
    public var stdoutData: Data { stdoutPath.flatMap { FileManager.default.contents(atPath: $0) } ?? Data() }
    public var stderrData: Data { stderrPath.flatMap { FileManager.default.contents(atPath: $0) } ?? Data() }
    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    public var stderr: String { String(decoding: stderrData, as: UTF8.self) }
}
