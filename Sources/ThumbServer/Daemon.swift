import Foundation
import ThumbBatch
import ThumbAccess
import ThumbConfiguration
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// `thumbd serve`: wires config, pipeline, watcher, listeners and HTTP together, then runs the
/// main loop (signals, watchdog) until SIGTERM or SIGINT.
package final class Daemon {
    /// Command-line overrides of the config file.
    package struct Options: Sendable {
        package var configPath: String?
        package var assets: String?
        package var cache: String?
        package var socket: String?
        package var listen: String?
        package var workers: Int?
        package init() {}
    }

    /// sysexits-style outcomes of `run`.
    package enum Exit: Int32, Sendable {
        /// `inUse` (EX_TEMPFAIL): another process has the cache folder open or answers on the
        /// socket (or has the TCP address): this one refuses to share, and touches neither.
        case ok = 0, unavailable = 69, software = 70, osError = 71, cannotCreate = 73, inUse = 75, config = 78
    }

    let options: Options
    let environment = ProcessInfo.processInfo.environment
    let notifier: SystemdNotifier

    package init(options: Options) {
        self.options = options
        notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
    }

    /// Blocks until the daemon stops; returns the exit status.
    ///
    /// The main thread runs the main loop from the start: signals are taken at any moment,
    /// while start-up (`Daemon+Startup.swift`) opens the index and listens on a queue of its own.
    /// Hits are served as soon as the index is open; the cache and asset reconciles run in the
    /// background (`GET /readyz` says when they are done). READY=1 goes to systemd when the
    /// socket serves (see docs/operations.md: dependants may start then), STATUS says what is pending.
    package func run() -> Exit {
        let hold = StartupHold(environment: environment)
        // Before any thread exists: these signals are taken by the one signal-waiting thread.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGTERM, SIGINT, SIGHUP] + (hold == nil ? [] : [SIGUSR2]) { sigaddset(&signals, signal) }
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
        let access: AccessControl
        do {
            access = try AccessControl(settings: config.access, environment: environment)
        } catch {
            Log.error("bad config: access: \(error)")
            return .config
        }
        if !access.unknownNames.isEmpty {
            Log.warning("access: this host has no \(access.unknownNames.joined(separator: ", ")): their rules do not apply")
        }
        var configuration = PipelineConfiguration(config, assetRoot: assets, cacheDirectory: cacheDirectory, workers: options.workers)
        // Each principal's share of the renderers, kept by the pipeline for its misses.
        configuration.renderAdmission = FairShare(settings: config.access.fairShare)
        configuration.pregenerated = Self.pregenerated(config.catalog)
        configuration.log = PipelineLog(fields: { level, message, fields in
            Log.write(Log.Priority(rawValue: level.rawValue) ?? .warning, message, fields)
        })
        configuration.logsRenders = true
        if hold?.point == .reconcile { configuration.reconcileGate = hold?.gate }

        let events = DaemonEvents()
        let startup = DaemonStartup(daemon: self, config: config, configuration: configuration, hold: hold, events: events,
                                    access: access, lifecycle: Lifecycle())
        do throws(SystemError) {
            try events.takeSignals(signals)
            try startup.begin()
        } catch {
            Log.error("cannot start: \(error)")
            return .osError
        }
        guard let services = waitUntilServing(events, startup: startup, hold: hold) else {
            return startup.exitStatus
        }
        notifier.notify("READY=1\nSTATUS=\(services.status())")

        mainLoop(events, services: services, hold: hold)

        notifier.notify("STOPPING=1\nSTATUS=stopping")
        Log.notice("stopping: new and queued requests answered 503, running renders finish")
        services.stop()
        Log.notice("stopped")
        return .ok
    }

    /// The main loop while start-up runs: a stop request is passed to it (it undoes what it
    /// did and reports), SIGUSR2 opens a test hold. Nil when start-up ended without serving.
    func waitUntilServing(_ events: DaemonEvents, startup: DaemonStartup, hold: StartupHold?) -> DaemonServices? {
        let watchdog = SystemdNotifier.watchdogInterval()
        let tick = Self.tick(watchdog)
        while true {
            switch events.next(timeoutSeconds: tick) {
            case .signal(SIGTERM), .signal(SIGINT):
                if !startup.isStopping {
                    Log.notice("stop requested during start-up")
                    notifier.notify("STOPPING=1\nSTATUS=stopping during start-up")
                }
                startup.lifecycle.stop()
            case .signal(SIGUSR2):
                hold?.gate.release()
            case .serving(let services):
                // Asked to stop meanwhile: serving ends before it began (nothing was answered
                // yet that must be drained beyond what `stop` does).
                if startup.isStopping {
                    services.stop()
                    Log.notice("stopped")
                    startup.exitStatus = .ok
                    return nil
                }
                return services
            case .failed(let status):
                startup.exitStatus = status
                return nil
            case .stoppedEarly:
                Log.notice("stopped")
                startup.exitStatus = .ok
                return nil
            case .signal, nil:
                break
            }
            if watchdog != nil { notifier.notify("WATCHDOG=1") }
        }
    }

    /// Waits for signals; pings the watchdog from this very loop, so a wedged loop (or a
    /// pipeline lock that cannot be taken) gets the service restarted. STATUS follows the
    /// background reconciles and the backlog.
    func mainLoop(_ events: DaemonEvents, services: DaemonServices, hold: StartupHold?) {
        let watchdog = SystemdNotifier.watchdogInterval()
        let tick = Self.tick(watchdog)
        var lastStatus = Date()
        var lastText = ""
        var wasReady = false
        while true {
            switch events.next(timeoutSeconds: tick) {
            case .signal(SIGTERM), .signal(SIGINT):
                return
            case .signal(SIGHUP):
                reload(api: services.api)
            case .signal(SIGUSR2):
                hold?.gate.release()
            default:
                break
            }
            let text = services.status() // takes the pipeline lock: proves it is not wedged
            if watchdog != nil { notifier.notify("WATCHDOG=1") }
            // While reconciling (and when it ends), every change; after, every 10 s at most.
            let ready = services.pipeline.startupProgress.isReady
            if text != lastText && (!ready || ready != wasReady || Date().timeIntervalSince(lastStatus) > 10) {
                lastStatus = Date()
                lastText = text
                notifier.notify("STATUS=\(text)")
            }
            wasReady = ready
        }
    }

    /// Half the watchdog interval, kept within 1 ms…1 s: a tiny WATCHDOG_USEC must not spin the loop.
    static func tick(_ watchdog: Double?) -> Double {
        max(0.001, min(1.0, (watchdog ?? 2) / 2))
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
        let activated = Listener.activated()
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
