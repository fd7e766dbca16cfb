import Foundation
import ThumbBatch
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// `thumbd serve`: wires config, pipeline, watcher, listeners and HTTP together, then runs the
/// main loop (signals, watchdog) until SIGTERM or SIGINT.
public final class Daemon {
    /// Command-line overrides of the config file.
    public struct Options: Sendable {
        public var configPath: String?
        public var assets: String?
        public var cache: String?
        public var socket: String?
        public var listen: String?
        public var workers: Int?
        public init() {}
    }

    /// sysexits-style outcomes of `run`.
    public enum Exit: Int32 {
        /// `inUse` (EX_TEMPFAIL): another process has the cache folder open or answers on the
        /// socket (or has the TCP address): this one refuses to share, and touches neither.
        case ok = 0, unavailable = 69, software = 70, osError = 71, cannotCreate = 73, inUse = 75, config = 78
    }

    let options: Options
    let environment = ProcessInfo.processInfo.environment
    let notifier: SystemdNotifier

    public init(options: Options) {
        self.options = options
        notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
    }

    /// Blocks until the daemon stops; returns the exit status.
    public func run() -> Exit {
        // Before any thread exists: these signals are taken by the main loop only.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        Glibc.signal(SIGPIPE, SIG_IGN)

        let config: ThumbConfig
        do {
            config = try loadConfig()
        } catch {
            Log.error("bad config: \(error)")
            return .config
        }
        guard let assets = options.assets ?? config.assetRoot else {
            Log.error("bad config: no asset folder: give --assets or the config's 'assets' key")
            return .config
        }
        let cacheDirectory = options.cache ?? config.service.cacheDirectory ?? environment["CACHE_DIRECTORY"].map { $0 + "/thumbnails" }
            ?? FileManager.default.currentDirectoryPath + "/thumbd-cache"
        var configuration = PipelineConfiguration(config, assetRoot: assets, cacheDirectory: cacheDirectory, workers: options.workers)
        configuration.pregenerated = Self.pregenerated(config.catalog)
        configuration.log = PipelineLog { level, message in Log.write(Log.Priority(rawValue: level.rawValue) ?? .warning, message) }

        notifier.notify("STATUS=opening the cache index")
        let pipeline: ThumbnailPipeline
        do {
            pipeline = try ThumbnailPipeline(configuration: configuration)
        } catch let error as CacheError where error.kind == .inUse {
            Log.error("\(error.reason): refusing to start a second daemon on it (one process per cache folder)")
            return .inUse
        } catch {
            Log.error("cannot start the pipeline (assets \(assets), cache \(cacheDirectory)): \(error)")
            return .cannotCreate
        }
        let listeners: [Listener]
        do {
            listeners = try openListeners(config)
        } catch {
            Log.error("cannot listen: \(error)")
            pipeline.shutdown()
            return error.errno == EADDRINUSE ? .inUse : .osError
        }
        let api = ThumbnailAPI(pipeline: pipeline, catalog: config.catalog, maxWaitMilliseconds: config.service.maxWaitMilliseconds)
        let server: HTTPServer
        do {
            server = try HTTPServer(listeners: listeners, threadsPerListener: config.service.httpThreads,
                                    maxConnections: config.service.maxConnections) { request, respond in
                api.handle(request, respond: respond)
            }
        } catch {
            Log.error("cannot start HTTP: \(error)")
            pipeline.shutdown()
            return .osError
        }
        let watcher: FolderWatcher?
        do {
            watcher = try pipeline.startWatching()
        } catch {
            Log.warning("folder watcher not running (\(error)); thumbnails are still rendered on request")
            watcher = nil
        }
        let spool = config.service.spool.map { SpoolWorker(root: $0, pipeline: pipeline, catalog: config.catalog) }
        spool?.start()
        let where_ = listeners.map(\.description).joined(separator: ", ")
        Log.notice("thumbd serving \(assets) on \(where_); cache \(cacheDirectory); \(configuration.workers) workers")
        notifier.notify("READY=1\nSTATUS=serving on \(where_)")

        mainLoop(signals: &signals, api: api, pipeline: pipeline)

        notifier.notify("STOPPING=1\nSTATUS=stopping")
        Log.notice("stopping: new and queued requests answered 503, running renders finish")
        api.beginShutdown()
        server.quiesce()
        spool?.stop()
        watcher?.stop()
        pipeline.shutdown()
        // Every request already received has its answer now: let it reach the client.
        server.drain(seconds: 10)
        server.stop()
        for listener in listeners {
            if let path = listener.unixPath { _ = try? systemCall("unlink \(path)") { unlink(path) } }
        }
        Log.notice("stopped")
        return .ok
    }

    /// Waits for signals; pings the watchdog from this very loop, so a wedged loop (or a
    /// pipeline lock that cannot be taken) gets the service restarted.
    func mainLoop(signals: inout sigset_t, api: ThumbnailAPI, pipeline: ThumbnailPipeline) {
        let watchdog = SystemdNotifier.watchdogInterval(environment: environment)
        // Half the watchdog interval, kept within 1 ms…1 s: a tiny WATCHDOG_USEC must not spin the loop.
        let tick = max(0.001, min(1.0, (watchdog ?? 2) / 2))
        var lastStatus = Date.distantPast
        while true {
            var timeout = timespec(tv_sec: Int(tick), tv_nsec: Int((tick - tick.rounded(.down)) * 1e9))
            let signal = sigtimedwait(&signals, nil, &timeout)
            switch signal {
            case SIGTERM, SIGINT:
                return
            case SIGHUP:
                reload(api: api)
            default:
                break
            }
            let metrics = pipeline.metrics // takes the pipeline lock: proves it is not wedged
            if watchdog != nil { notifier.notify("WATCHDOG=1") }
            if Date().timeIntervalSince(lastStatus) > 10 {
                lastStatus = Date()
                let queued = metrics.queuedJobs.values.reduce(0, +)
                notifier.notify("STATUS=serving: \(metrics.requests) requests, \(metrics.renders) renders, \(queued) queued")
            }
        }
    }

    /// SIGHUP: the new config's kinds replace the old; a bad config is refused and the old kept.
    func reload(api: ThumbnailAPI) {
        notifier.notify("RELOADING=1")
        defer { notifier.notify("READY=1") }
        do {
            let config = try loadConfig()
            api.replaceCatalog(config.catalog, formats: config.outputFormats)
            Log.notice("config reloaded: \(config.catalog.kinds.count) kinds (limits, budgets and listeners apply at restart)")
        } catch {
            Log.error("config reload refused, keeping the running config: \(error)")
        }
    }

    func loadConfig() throws(ConfigError) -> ThumbConfig {
        guard let path = options.configPath else { return .builtIn }
        return try ThumbConfig.load(path: path)
    }

    func openListeners(_ config: ThumbConfig) throws(SystemError) -> [Listener] {
        let activated = Listener.activated(environment: environment)
        if !activated.isEmpty { return activated }
        let socketPath = options.socket ?? config.service.socketPath
            ?? environment["RUNTIME_DIRECTORY"].map { $0 + "/thumbd.sock" } ?? FileManager.default.currentDirectoryPath + "/thumbd.sock"
        var listeners = [try Listener.unix(path: socketPath, mode: config.service.socketMode, group: config.service.socketGroup)]
        if let text = options.listen ?? config.service.listen {
            guard let address = ListenAddress(text) else {
                throw SystemError(operation: "listen address \(text) (loopback HOST:PORT only)", errno: EINVAL)
            }
            listeners.append(try Listener.tcp(address))
        }
        return listeners
    }

    static func pregenerated(_ catalog: SlotCatalog) -> [(kind: SlotKind, scale: Int)] {
        catalog.kinds.values.filter(\.pregenerate).sorted { $0.name < $1.name }.flatMap { kind in kind.scales.map { (kind, $0) } }
    }
}
