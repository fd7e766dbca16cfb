#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbWorker

extension PipelineConfiguration {
    /// The one mapping from the config file to a pipeline, for `serve` (and its spool) and
    /// `batch`: what a command does differently it sets afterwards, in one place of its own.
    /// `workers` overrides the file's (a command-line flag); nil with neither: one per core.
    public init(_ config: ThumbConfig, assetRoot: String, cacheDirectory: String, workers: Int? = nil) {
        self.init(assetRoot: assetRoot, cacheDirectory: cacheDirectory)
        memoryCacheBytes = config.service.memoryCacheBytes
        diskCacheBytes = config.service.diskCacheBytes
        self.workers = workers ?? config.service.workers ?? max(1, System.processorCount)
        maxQueuedJobs = config.service.maxQueuedJobs
        limits = config.limits
        encoder = config.encoder
        tuning = config.shrinkTuning
        renderSeconds = config.service.renderSeconds
        worker = config.service.sandbox ? .thumbd(memoryLimitBytes: config.service.workerMemoryBytes) : nil
    }
}

extension WorkerLaunch {
    /// The `thumbd` binary that runs this code, with its internal worker subcommand.
    /// `/proc/self/exe` is this process's own executable even after a package upgrade replaced
    /// the file, so a respawned worker always speaks this daemon's protocol version.
    /// `THUMBD_WORKER_EXECUTABLE` names another (the tests' fault-hook worker, `thumbd-test-worker`).
    public static func thumbd(memoryLimitBytes: Int) -> WorkerLaunch {
        if let path = getenv("THUMBD_WORKER_EXECUTABLE").map({ String(cString: $0) }), path.hasPrefix("/") {
            return WorkerLaunch(executablePath: path, arguments: [], memoryLimitBytes: memoryLimitBytes)
        }
        return WorkerLaunch(executablePath: "/proc/self/exe", arguments: [workerSubcommand], memoryLimitBytes: memoryLimitBytes)
    }

    /// The hidden `thumbd` subcommand that runs `RenderWorkerMain`.
    public static let workerSubcommand = "render-worker"
}
