import ThumbSystem

/// How the daemon starts a render worker: which executable (the `thumbd` binary itself with its
/// internal worker subcommand, or a test worker), and the limits the worker applies to itself.
package struct WorkerLaunch: Sendable, Equatable {
    /// Absolute path of the executable (`posix_spawn` does no PATH search).
    package var executablePath: String
    /// Arguments after argv[0] (which is `executablePath`).
    package var arguments: [String]
    /// RLIMIT_AS of each worker, bytes (`limits.workerMemoryBytes`); 0: none.
    package var memoryLimitBytes: Int
    /// Longest wait for a new worker's hello, seconds.
    package var helloTimeoutSeconds: Double
    /// Added to the worker's otherwise minimal environment (`SWIFT_BACKTRACE=enable=no` and the
    /// memory limit), NAME=VALUE each.
    package var extraEnvironment: [String]

    package init(executablePath: String, arguments: [String], memoryLimitBytes: Int, helloTimeoutSeconds: Double = 5,
                extraEnvironment: [String] = []) {
        self.executablePath = executablePath
        self.arguments = arguments
        self.memoryLimitBytes = memoryLimitBytes
        self.helloTimeoutSeconds = helloTimeoutSeconds
        self.extraEnvironment = extraEnvironment
    }

    /// The worker's whole environment. SWIFT_BACKTRACE=enable=no: a trap dies at once instead of
    /// spending seconds in the backtracer (which could not work in the sandbox anyway).
    /// A worker writes plain text to its stderr pipe; the daemon relays it in its own log format.
    var environment: [String] {
        ["SWIFT_BACKTRACE=enable=no", "\(RenderWorkerMain.memoryLimitVariable)=\(max(0, memoryLimitBytes))"] + extraEnvironment
    }
}

/// Why no worker could be started.
package struct WorkerSpawnError: Error, Equatable, Sendable, CustomStringConvertible {
    package var reason: String

    package init(reason: String) { self.reason = reason }

    package var description: String { "cannot start a render worker: \(reason)" }
}
