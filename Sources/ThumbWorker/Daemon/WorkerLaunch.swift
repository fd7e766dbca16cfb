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
    /// Whether the worker loads FFmpeg before it sandboxes itself: a video worker. FFmpeg's
    /// libraries map ~190 MB of address space and dirty ~25 MB per process (measured with
    /// dlopen here), so a still worker does without them and stays within a 256 MiB
    /// `workerMemoryBytes`; a video worker needs about 512 MiB.
    package var loadsVideo = false

    /// The same launch, for a video worker.
    package func loadingVideo() -> WorkerLaunch {
        var launch = self
        launch.loadsVideo = true
        return launch
    }

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
    /// `GLIBC_TUNABLES`: see `heapFillByte`.
    var environment: [String] {
        ["SWIFT_BACKTRACE=enable=no", "\(RenderWorkerMain.memoryLimitVariable)=\(max(0, memoryLimitBytes))",
         Self.heapTunables] + (loadsVideo ? ["\(RenderWorkerMain.videoVariable)=1"] : []) + extraEnvironment
    }

    /// A worker renders one asset after another, perhaps of other principals, in one heap: a
    /// decoder that hands out memory it never wrote as pixels (libheif's GHSA-2vh6-whr3-cmq3 did)
    /// would show the last asset's pixels in the next one's thumbnail. glibc's perturb tunable
    /// fills every block malloc hands out with `heapFillByte ^ 0xFF` and every freed one with
    /// `heapFillByte`, so no block holds an earlier render's bytes (fresh pages from the kernel
    /// are zero anyway). glibc skips both fills for blocks it keeps in its per-thread cache
    /// (tcache), so that cache is off (`tcache_count=0`): measured, 1,550 bytes of an earlier
    /// render came back in 1.8 MB of fresh blocks with it on, none with it off. Done by glibc,
    /// not by us zeroing each decoder's buffers: it covers every library's allocations,
    /// including ones we never see. Its cost is in Benchmarks/README.md.
    package static let heapFillByte: UInt8 = 0xA5
    package static let heapTunables = "GLIBC_TUNABLES=glibc.malloc.perturb=\(heapFillByte):glibc.malloc.tcache_count=0"

}

/// Why no worker could be started.
package struct WorkerSpawnError: Error, Equatable, Sendable, CustomStringConvertible {
    package var reason: String

    package init(reason: String) { self.reason = reason }

    package var description: String { "cannot start a render worker: \(reason)" }
}
