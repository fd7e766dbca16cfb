import Dispatch
import Foundation
import Synchronization
import ThumbBatch
import ThumbConfiguration
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// Start-up, off the main thread: open the pipeline (the index, quick check only), listen,
/// serve; then follow the folder (watcher, asset reconcile) and the spool. A stop request is
/// looked at between steps; what was started by then is undone by the one who sees it.
final class DaemonStartup: @unchecked Sendable {
    let daemon: Daemon
    let config: ThumbConfig
    let configuration: PipelineConfiguration
    let hold: StartupHold?
    let events: DaemonEvents
    let access: AccessControl
    /// The daemon's, stopped by SIGTERM or SIGINT: every part started here observes it.
    let lifecycle: Lifecycle
    /// Written by the main thread only (when start-up ended without serving).
    var exitStatus = Daemon.Exit.ok

    init(daemon: Daemon, config: ThumbConfig, configuration: PipelineConfiguration, hold: StartupHold?, events: DaemonEvents,
         access: AccessControl, lifecycle: Lifecycle) {
        self.lifecycle = lifecycle
        // A held start-up is let go by a stop.
        lifecycle.onStop { hold?.gate.release() }
        self.access = access
        self.daemon = daemon
        self.config = config
        self.configuration = configuration
        self.hold = hold
        self.events = events
    }

    var isStopping: Bool { lifecycle.isStopping }

    /// Opens and starts serving on a thread of its own (the main thread waits for its events),
    /// then, on the same thread, starts following the folder: adding a watch per folder takes a
    /// while on a large tree, and hits need none of it.
    func begin() throws(SystemError) {
        try LongLivedThread.detach(name: "thumbd-startup") { [self] in
            let event = run()
            events.post(event)
            if case .serving(let services) = event {
                services.startFollowing(spoolRoot: config.service.spool, queue: config.service.queue, catalog: config.catalog)
            }
        }
    }

    private func run() -> DaemonEvents.Event {
        if hold?.point == .open {
            Log.info("start-up held before opening the cache (THUMBD_TEST_HOLD=open)")
            hold?.gate.pass()
        }
        if isStopping { return .stoppedEarly }
        daemon.notifier.notify("STATUS=opening the cache index")
        let pipeline: ThumbnailPipeline
        do {
            pipeline = try ThumbnailPipeline(configuration: configuration, lifecycle: lifecycle)
        } catch let error as CacheError where error.kind == .inUse {
            Log.error("\(error.reason): refusing to start a second daemon on it (one process per cache folder)")
            return .failed(.inUse)
        } catch {
            Log.error("cannot start the pipeline (assets \(configuration.assetRoot), cache \(configuration.cacheDirectory)): \(error)")
            return .failed(.cannotCreate)
        }
        if isStopping {
            pipeline.shutdown()
            return .stoppedEarly
        }
        let listeners: [Listener]
        do {
            listeners = try daemon.openListeners(config)
        } catch {
            Log.error("cannot listen: \(error)")
            pipeline.shutdown()
            return .failed(error.errno == EADDRINUSE ? .inUse : .osError)
        }
        let api = ThumbnailAPI(pipeline: pipeline, catalog: config.catalog, maxWaitMilliseconds: config.service.maxWaitMilliseconds,
                               access: access)
        let server: HTTPServer
        do {
            server = try HTTPServer(listeners: listeners, threadsPerListener: config.service.httpThreads,
                                    maxConnections: config.service.maxConnections) { request, respond in
                api.handle(request, respond: respond)
            }
        } catch {
            Log.error("cannot start HTTP: \(error)")
            pipeline.shutdown()
            DaemonServices.removeSockets(listeners)
            return .failed(.osError)
        }
        let services = DaemonServices(pipeline: pipeline, api: api, server: server, listeners: listeners, lifecycle: lifecycle)
        let where_ = listeners.map(\.description).joined(separator: ", ")
        Log.notice("thumbd serving \(configuration.assetRoot) on \(where_); cache \(configuration.cacheDirectory); \(configuration.workers) workers"
                   + "; reconciling in the background")
        return .serving(services)
    }
}

/// What a serving daemon runs, and its orderly stop.
final class DaemonServices: @unchecked Sendable {
    let pipeline: ThumbnailPipeline
    let api: ThumbnailAPI
    let server: HTTPServer
    let listeners: [Listener]
    /// The daemon's: `stop` stops it first, so that the parts stop together.
    let lifecycle: Lifecycle
    /// Started after serving; nil until then, and never once stopping (looked at under this
    /// lock by `startFollowing`, after the lifecycle's stop by `stop`: one of them sees the other).
    private let following = Mutex<(watcher: FolderWatcher?, spool: SpoolConsumer?, queue: LongLivedThread?)>((nil, nil, nil))

    init(pipeline: ThumbnailPipeline, api: ThumbnailAPI, server: HTTPServer, listeners: [Listener], lifecycle: Lifecycle) {
        self.lifecycle = lifecycle
        self.pipeline = pipeline
        self.api = api
        self.server = server
        self.listeners = listeners
    }

    /// The watcher (its asset reconcile in the background) and the spool. A stop that came
    /// meanwhile wins: what started is stopped again here.
    func startFollowing(spoolRoot: String?, queue: RedisQueueAddress?, catalog: SlotCatalog) {
        var watcher: FolderWatcher?
        do {
            watcher = try pipeline.startWatching()
        } catch {
            Log.warning("folder watcher not running (\(error)); thumbnails are still rendered on request")
            pipeline.reconcileInBackground()
        }
        let spool = spoolRoot.flatMap { spoolConsumer(root: $0, catalog: catalog) }
        let stopped = following.withLock { following -> Bool in
            guard !lifecycle.isStopping else { return true }
            following.watcher = watcher
            following.spool = spool
            if let queue {
                let counters = RedisQueueCounters()
                api.queueCounters.withLock { $0 = counters }
                do throws(SystemError) {
                    following.queue = try QueueConsumer.follow(queue, runner: batchRunner(catalog), log: pipeline.configuration.log,
                                                               lifecycle: lifecycle.child(), counters: counters)
                } catch {
                    Log.error("queue \(queue.description) not followed: \(error)")
                }
            }
            return false
        }
        if stopped {
            watcher?.stop()
            return
        }
        do throws(SystemError) {
            try spool?.startFollowing()
        } catch {
            Log.error("spool \(spoolRoot ?? "") not followed: \(error)")
        }
    }

    /// A runner through the daemon's own pipeline into the cache it serves: the pregenerate
    /// kinds for jobs that name none (every kind when none is).
    private func batchRunner(_ catalog: SlotCatalog) -> BatchRunner {
        let pregenerated = catalog.kinds.values.filter(\.pregenerate).map(\.name).sorted()
        return BatchRunner(pipeline: pipeline, catalog: catalog,
                           defaultKinds: pregenerated.isEmpty ? catalog.kinds.keys.sorted() : pregenerated, outputTree: nil)
    }

    /// The spool's consumer, rendering through the daemon's own pipeline into the cache it serves.
    private func spoolConsumer(root: String, catalog: SlotCatalog) -> SpoolConsumer? {
        let folder: SpoolFolder
        do { folder = try SpoolFolder(root: root) } catch {
            Log.error("spool \(root) unusable: \(error)")
            return nil
        }
        return SpoolConsumer(folder: folder, runner: batchRunner(catalog), log: pipeline.configuration.log, lifecycle: lifecycle)
    }

    /// SIGTERM: new and queued requests get 503, running renders finish, the background work
    /// stops at its next batch, the index closes, answers already decided reach their clients.
    func stop() {
        lifecycle.stop()
        server.quiesce()
        let (watcher, spool, queue) = following.withLock { ($0.watcher, $0.spool, $0.queue) }
        spool?.stop()
        // Its lifecycle is a child of the daemon's, stopped above: the jobs in hand finish.
        queue?.join()
        watcher?.stop()
        pipeline.shutdown()
        // Every request already received has its answer now: let it reach the client.
        server.drain(seconds: 10)
        server.stop()
        Self.removeSockets(listeners)
    }

    static func removeSockets(_ listeners: [Listener]) {
        for listener in listeners {
            if let path = listener.unixPath { _ = try? systemCall("unlink \(path)") { unlink(path) } }
        }
    }

    /// The STATUS line: what is still reconciling, then the counters and the backlog.
    func status() -> String {
        let metrics = pipeline.metrics
        let queued = metrics.queuedJobs.values.reduce(0, +)
        var counts = "\(metrics.requests) requests, \(metrics.renders) renders, \(queued) queued, backlog \(metrics.backlog.rows)"
        if let queue = api.queueCounters.withLock({ $0 }) { counts += "; queue: " + queue.snapshot.statusLine }
        let startup = metrics.startup
        guard !startup.isReady else { return "serving: \(counts)" }
        let cache = startup.cacheReconciled ? "cache done"
            : "cache \(startup.cacheFiles.shardsDone)/\(CacheIndex.FileReconcileProgress.shardCount) shards "
              + "(\(startup.cacheFiles.rowsChecked)/\(startup.cacheFiles.rowsAtStart) entries)"
        let assets = startup.assetsReconciled ? "assets done" : "assets \(startup.assetsChecked) checked"
        return "serving, reconciling \(cache), \(assets): \(counts)"
    }
}
