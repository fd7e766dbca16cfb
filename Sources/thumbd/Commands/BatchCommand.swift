import Foundation
import ThumbBatch
import ThumbConfiguration
import ThumbImaging
import ThumbPipeline
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch`: pre-render a catalogue through the pipeline at batch priority.
struct BatchCommand: ThumbdCommand {
    static let name = "batch"
    static let summary = "pre-render a folder, a jobs file or a spool folder"
    static let usage = """
        usage: thumbd batch [--config FILE] (DIR | --jobs FILE|- | --spool DIR | --queue URL [--follow [--metrics-listen A]])
                            [--kinds K1,K2]
                            [--format F] [--out-dir DIR] [--assets DIR] [--cache DIR] [--workers N] [--json]

          DIR            every image under DIR (DIR is the asset folder)
          --jobs FILE|-  JSON lines: {"asset": "path/under/assets.jpg", "kinds": ["large"], "scale": 2, "format": "webp"}
          --spool DIR    claim job files from DIR/incoming (moved to claimed/, then done/ or failed/)
          --queue URL    redis://[USER@]HOST:PORT/STREAM[?password-file=PATH&group=G&claim-idle-ms=N&max-deliveries=N]:
                         a consumer of the group "thumbd" (Redis Streams) until the stream is drained, which
                         reconnects with backoff when Redis goes away; --follow without it: the config's "queue"
          --follow       with a queue: wait for jobs (a blocking read) instead of ending when the stream is drained,
                         stop on SIGTERM or SIGINT (the jobs in hand finish); under
                         systemd (Type=notify): READY=1, STATUS with the counts and the group's lag, WATCHDOG=1
          --metrics-listen ADDRESS  with --follow: GET /metrics (the thumbd_stream_* families) on a loopback
                         address, 127.0.0.1:PORT or [::1]:PORT
                         The password: password-file=, else $CREDENTIALS_DIRECTORY/redis-password (LoadCredential=);
                         one in the URL works but is visible in ps (a warning says so)
          --kinds        kinds to render when a job names none (default: the config's pregenerate kinds, else all)
          --format F     auto, jpeg, png, webp or avif for jobs that name none (default: each kind's encoding.format)
          --out-dir DIR  write DIR/<kind>@<scale>x/<asset path>.<ext> (a.png → a.png.jpg) instead of into the cache
          --json         print the summary as JSON

        Idempotent (up-to-date thumbnails are skipped) and resumable (outputs are written atomically).
        The cache keeps to the config's cache.diskBytes (default 2 GiB), evicting the least recently
        used: a batch larger than it keeps only its last thumbnails, and says so.
        exit status: 0 all rendered (or --follow stopped by a signal); 64 usage; 65 some inputs failed (the rest
        rendered); 66 no such folder; 69 Redis unreachable at the start or refused a command; 73 cannot open the cache; 75 another
        thumbd has the cache folder open; 78 bad config (or Redis refused the credentials).
        """

    var configPath: String?
    var folder: String?
    var jobsFile: String?
    var spool: String?
    var queue: RedisQueue.Address?
    var follows: Bool
    var metricsAddress: ListenAddress?
    var kinds: [String]?
    var format: EncoderSettings.Format?
    var outputTree: String?
    var assets: String?
    var cache: String?
    var workers: Int?
    var json: Bool

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--config", "--jobs", "--spool", "--queue", "--kinds", "--format", "--out-dir",
                                                              "--assets", "--cache", "--workers", "--metrics-listen"],
                                          flags: ["--json", "--follow"])
        configPath = try scanner.value("--config")
        jobsFile = try scanner.value("--jobs")
        spool = try scanner.value("--spool")
        if let url = try scanner.value("--queue") {
            do throws(RedisQueue.Address.InvalidURL) {
                queue = try RedisQueue.Address(validating: url)
            } catch {
                // Not the URL itself: it may hold a password.
                throw UsageError(message: "--queue must be redis://[USER@]HOST:PORT/STREAM[?password-file=PATH&group=G"
                                 + "&claim-idle-ms=N&max-deliveries=N]: this one \(error.reason)")
            }
        }
        guard scanner.positionals.count <= 1 else { throw UsageError(message: "give one folder") }
        folder = scanner.positionals.first
        follows = scanner.flag("--follow")
        // --follow alone: the config's "queue" (checked once the config is read).
        let sources = [folder != nil, jobsFile != nil, spool != nil, queue != nil].filter { $0 }.count
        guard sources == 1 || (sources == 0 && follows) else {
            throw UsageError(message: "give exactly one of DIR, --jobs FILE, --spool DIR or --queue URL")
        }
        if follows && (folder != nil || jobsFile != nil || spool != nil) {
            throw UsageError(message: "--follow is for a queue (--queue URL, or the config's \"queue\")")
        }
        if let text = try scanner.value("--metrics-listen") {
            guard follows else { throw UsageError(message: "--metrics-listen is for a follower (--follow)") }
            guard let address = ListenAddress(text) else {
                throw UsageError(message: "--metrics-listen must be a loopback address, 127.0.0.1:PORT or [::1]:PORT, got '\(text)'")
            }
            metricsAddress = address
        }
        kinds = try scanner.value("--kinds").map(Self.splitKinds)
        if let kinds, kinds.isEmpty { throw UsageError(message: "--kinds names no kind") }
        if let text = try scanner.value("--format") {
            guard let parsed = EncoderSettings.Format(rawValue: text) else {
                throw UsageError(message: "--format must be auto, jpeg, png, webp or avif, got '\(text)'")
            }
            format = parsed
        }
        outputTree = try scanner.value("--out-dir")
        assets = try scanner.value("--assets")
        cache = try scanner.value("--cache")
        workers = try scanner.integer("--workers", in: 1...256)
        json = scanner.flag("--json")
    }

    /// "large,48x48@3x,fill,circle" → ["large", "48x48@3x,fill,circle"]: an inline spec's
    /// options stay with their spec.
    static func splitKinds(_ text: String) -> [String] { BatchJob.splitKinds(text) }

    func run() -> ExitCode {
        // A follower stops on SIGTERM or SIGINT: blocked before any thread exists, taken by one
        // thread (`consume`).
        let signals = follows ? Self.blockStopSignals() : nil
        guard let config = ConfigOption.loadReporting(configPath) else { return .config }
        guard let assetRoot = folder ?? assets ?? config.assetRoot else {
            Console.error("thumbd batch: no asset folder: give DIR, --assets or the config's 'assets' key")
            return .usage
        }
        guard ConfigOption.isFolder(assetRoot) else {
            Console.error("thumbd batch: \(assetRoot): no such folder")
            return .noInput
        }
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? "/tmp"
        // CACHE_DIRECTORY: systemd's CacheDirectory= (thumbd-queue@.service).
        let cacheDirectory = cache ?? config.service.cacheDirectory ?? environment["CACHE_DIRECTORY"].map { $0 + "/thumbnails" }
            ?? home + "/.cache/thumbd/thumbnails"
        var configuration = PipelineConfiguration(config, assetRoot: assetRoot, cacheDirectory: cacheDirectory, workers: workers)
        configuration.memoryCacheBytes = 8 << 20 // a batch rarely asks twice
        let defaultKinds = kinds ?? {
            let pregenerated = config.catalog.kinds.values.filter(\.pregenerate).map(\.name).sorted()
            return pregenerated.isEmpty ? config.catalog.kinds.keys.sorted() : pregenerated
        }()
        for name in defaultKinds {
            do { _ = try config.catalog.resolve(name) } catch {
                Console.error("thumbd batch: \(error)")
                return .usage
            }
        }
        let pipeline: ThumbnailPipeline
        do {
            pipeline = try ThumbnailPipeline(configuration: configuration)
        } catch let error as CacheError where error.kind == .inUse {
            Console.error("thumbd batch: \(error.reason): refusing to share it (one process per cache folder)")
            return .tempFail
        } catch {
            Console.error("thumbd batch: cannot open the cache \(cacheDirectory): \(error)")
            return .cannotCreate
        }
        defer { pipeline.shutdown() }
        let runner = BatchRunner(pipeline: pipeline, catalog: config.catalog, defaultKinds: defaultKinds, outputTree: outputTree)
        runner.defaultFormat = format
        let reporter = ProgressReporter(interactive: isatty(STDERR_FILENO) == 1)
        runner.progress = { summary, expected in reporter.report(summary, expected: expected) }

        var summary: BatchRunner.Summary
        var malformed: [BatchRunner.Failure] = []
        if let queue = queue ?? (follows ? config.service.queue : nil) {
            let consumed = consume(queue, runner: runner, log: pipeline.configuration.log, signals: signals)
            guard case .ran(let outcome, let rejected) = consumed else {
                reporter.finish()
                if case .failed(let code) = consumed { return code }
                return .ok // stopped by a signal before Redis answered
            }
            summary = outcome.summary
            malformed = rejected
            if let error = outcome.error {
                // Redis's own words (an error reply may quote what a producer sent).
                Console.error("thumbd batch: queue \(queue.description): \(JSONLines.textLine(error.description))")
                reporter.finish()
                BatchReport.print(summary, json: json)
                return error.kind == .authentication ? .config : .unavailable
            }
            if follows {
                reporter.finish()
                BatchReport.print(summary, json: json)
                return .ok // stopped by a signal: the jobs in hand were finished or left pending
            }
        } else if follows {
            Console.error("thumbd batch: --follow needs a queue: --queue URL, or \"queue\" in the config")
            return .usage
        } else if let spool {
            let folder: SpoolFolder
            do { folder = try SpoolFolder(root: spool) } catch {
                Console.error("thumbd batch: cannot use spool \(spool): \(error)")
                return .cannotCreate
            }
            let pass = SpoolConsumer(folder: folder, runner: runner, log: pipeline.configuration.log).drainOnce()
            summary = pass.summary
            for name in pass.gaveUp {
                malformed.append(BatchRunner.Failure(asset: name, kind: "-", reason: "\(SpoolFolder.diedReason) too often: moved to failed/"))
            }
        } else if let jobsFile {
            let lines: [Substring]
            do {
                let data = jobsFile == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: jobsFile))
                lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            } catch {
                Console.error("thumbd batch: \(jobsFile): \((error as NSError).localizedDescription)")
                return .noInput
            }
            var jobs: [BatchJob] = []
            for (number, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                do { jobs.append(try BatchJob.parse(Data(line.utf8))) } catch {
                    malformed.append(BatchRunner.Failure(asset: "\(jobsFile):\(number + 1)", kind: "-", reason: "malformed job: \(error.reason)"))
                }
            }
            summary = runner.run(jobs, expected: jobs.reduce(0) { $0 + ($1.kinds?.count ?? defaultKinds.count) })
        } else {
            // Neither the cache nor an output tree inside the folder is input.
            let excluded = [cacheDirectory] + (outputTree.map { [$0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0] } ?? [])
            let root = (try? AssetRoot(path: assetRoot, excluding: excluded)).map { AssetScanner.scan($0) } ?? []
            let jobs = root.map { BatchJob(asset: $0.path) }
            summary = runner.run(jobs, expected: jobs.count * defaultKinds.count)
        }
        summary.failures = malformed + summary.failures
        reporter.finish()
        // Into the cache, a batch larger than its budget evicts its own first thumbnails: say so.
        let held = pipeline.cacheStatistics.disk
        if outputTree == nil, held.entries < summary.rendered {
            Console.error("thumbd batch: the cache keeps \(held.entries) of the \(summary.rendered) thumbnails rendered (\(held.bytes) bytes): "
                          + "cache.diskBytes is \(configuration.diskCacheBytes), and the least recently used were evicted; "
                          + "raise it to keep a whole batch")
        }
        BatchReport.print(summary, json: json)
        return summary.failures.isEmpty ? .ok : .dataError
    }
}
