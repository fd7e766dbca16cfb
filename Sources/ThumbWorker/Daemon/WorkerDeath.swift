#if canImport(Glibc)
import Glibc
#endif

/// How a worker process ended, as `waitpid` told.
package enum WorkerEnding: Sendable, Equatable, CustomStringConvertible {
    case exited(status: Int32)
    case signalled(signal: Int32)
    /// Reaped by someone else (a daemon that ignores SIGCHLD has its children reaped for it).
    case unknown

    /// "SIGSEGV" and the like, for a signalled ending.
    package var signalName: String? {
        guard case .signalled(let signal) = self else { return nil }
        return Self.signalNames[signal] ?? "signal \(signal)"
    }

    package var description: String {
        switch self {
        case .exited(let status):
            let meaning = RenderWorkerExit(rawValue: status).map { " (\($0.summary))" } ?? ""
            return "exited with status \(status)\(meaning)"
        case .signalled(let signal):
            return "died of signal \(signal) (\(signalName ?? ""): \(String(cString: strsignal(signal))))"
        case .unknown:
            return "ended (reaped elsewhere)"
        }
    }

    static let signalNames: [Int32: String] = [
        SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGABRT: "SIGABRT",
        SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1", SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2",
        SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM", SIGCHLD: "SIGCHLD", SIGXCPU: "SIGXCPU",
        SIGXFSZ: "SIGXFSZ", SIGSYS: "SIGSYS",
    ]
}

/// What a restart is counted under (`WorkerRestartCounters`).
package enum WorkerRestartReason: String, Sendable, CaseIterable {
    /// Killed by a signal it did not get from the daemon: a trap, a fault, the OOM killer, seccomp.
    case crashedBySignal = "signal"
    /// Exited on its own.
    case exited
    /// Past its deadline: killed by the daemon.
    case timedOut = "timeout"
    /// Broke the protocol (a malformed answer, a closed socket while alive): killed by the daemon.
    case malformedAnswer = "malformed"
    /// Could not be started, or never said hello.
    case spawnFailed = "spawn"
}

/// A worker that died (or was killed for misbehaving) while the daemon dealt with it.
package struct WorkerDeath: Sendable, Equatable, CustomStringConvertible {
    package enum Symptom: Sendable, Equatable {
        /// Its socket was already closed when the order was sent: it died idle, the order never reached it.
        case notListening
        /// Closed its socket before any byte of the answer.
        case closedSocket
        /// Closed its socket partway through the answer.
        case closedMidAnswer(receivedBytes: Int)
        case malformedAnswer(reason: String)
        case socketFailed(reason: String)
    }

    package var pid: Int32
    package var symptom: Symptom
    package var ending: WorkerEnding
    /// The SIGKILL was the daemon's: the worker still ran when its fault was seen.
    package var killedByDaemon: Bool
    /// CPU the worker spent since its last answer (its whole CPU time from wait4, less what its
    /// answers accounted for), seconds: the wasted work of the request it held.
    package var cpuSeconds: Double

    /// Whether the request it held can be blamed: false when the order never reached it.
    package var heldTheRequest: Bool { symptom != .notListening }

    package var restartReason: WorkerRestartReason {
        if case .malformedAnswer = symptom { return .malformedAnswer }
        if killedByDaemon { return .malformedAnswer }
        switch ending {
        case .signalled: return .crashedBySignal
        case .exited, .unknown: return .exited
        }
    }

    package var description: String {
        let how = switch symptom {
        case .notListening: "before it was sent an order"
        case .closedSocket: "before answering"
        case .closedMidAnswer(let received): "mid-answer (after \(received) bytes)"
        case .malformedAnswer(let reason): "after a malformed answer: \(reason)"
        case .socketFailed(let reason): "after its socket failed: \(reason)"
        }
        let killed = killedByDaemon ? ", killed by the daemon" : ""
        return "render worker \(pid) \(ending)\(killed) \(how)"
    }
}
