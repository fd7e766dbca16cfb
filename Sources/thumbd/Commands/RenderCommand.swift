#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ThumbImaging
import ThumbPipeline
import ThumbSystem
import ThumbWorker

/// `thumbd render`: one-shot thumbnails of files, in parallel across the cores.
struct RenderCommand: ThumbdCommand {
    static let name = "render"
    static let summary = "render thumbnails of image files"
    static let usage = """
        usage: thumbd render INPUT... --slot KIND|SPEC [--slot ...] [--scale N] [--config FILE]
                             [-o FILE | --out-dir DIR] [--format auto|jpeg|png|webp|avif] [--quality N] [--no-rotate]
                             [--sandbox]

          --slot KIND|SPEC   a kind of the config (contact-avatar, large@2x), an inline spec in points
                             (48x48@3x,fill,circle  256x256,fit  56x56@2x,fill,radius=8), or 'all'
          --scale N          render at this scale only (default: every scale the kind declares)
          --config FILE      slot kinds, limits and encoder settings (default: the freedesktop.org kinds)
          -o FILE            output file (one input, one slot, one scale)
          --out-dir DIR      outputs named INPUT-BASE.KIND@Nx.EXT (default: the current folder)
          --format F         auto (PNG when the result has alpha, else JPEG), jpeg, png, webp or avif
          --quality N        quality 1-100 of the JPEG, WebP or AVIF written
          --no-rotate        ignore EXIF orientation
          --jobs N           parallel renders (default: one per core)
          --sandbox          decode in sandboxed worker processes, as `thumbd serve` does (for files
                             you do not trust: a decoder crash or loop fails that input only); videos
                             (.mp4 .mov .mkv .webm .avi …) are always decoded there

        exit status: 0 all rendered; 64 usage; 65 an input is not a decodable image or breaks a limit;
        66 an input is missing; 70 encoder failure or a worker died (--sandbox); 73/74 output or I/O errors; 77 an input may not be
        read; 78 bad config. With several failures, the first's.
        """

    var inputs: [String]
    var slots: [String]
    var scale: Int?
    var configPath: String?
    var outputFile: String?
    var outputFolder: String
    var format: EncoderSettings.Format?
    var quality: Int?
    var appliesOrientation: Bool
    var jobs: Int
    var sandboxed: Bool

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--slot", "--scale", "--config", "-o", "--output", "--out-dir",
                                                              "--format", "--quality", "--jobs"],
                                          flags: ["--no-rotate", "--sandbox"])
        inputs = scanner.positionals
        slots = scanner.values("--slot")
        guard !inputs.isEmpty else { throw UsageError(message: "no input files") }
        guard !slots.isEmpty else { throw UsageError(message: "--slot is required") }
        scale = try scanner.integer("--scale", in: SlotSpec.supportedScales)
        configPath = try scanner.value("--config")
        outputFile = try scanner.value("-o", "--output")
        let folder = try scanner.value("--out-dir")
        guard outputFile == nil || folder == nil else { throw UsageError(message: "give -o or --out-dir, not both") }
        outputFolder = folder ?? "."
        if let text = try scanner.value("--format") {
            guard let parsed = EncoderSettings.Format(rawValue: text) else {
                throw UsageError(message: "--format must be auto, jpeg, png, webp or avif, got '\(text)'")
            }
            format = parsed
        }
        quality = try scanner.integer("--quality", in: 1...100)
        appliesOrientation = !scanner.flag("--no-rotate")
        jobs = try scanner.integer("--jobs", in: 1...256) ?? System.processorCount
        sandboxed = scanner.flag("--sandbox")
    }

    /// One output to produce.
    struct Job {
        var input: String
        var selection: SlotSelection
        var scale: Int
        var output: String
    }

    func run() -> ExitCode {
        guard let config = ConfigOption.loadReporting(configPath) else { return .config }
        var encoder = config.encoder
        if let format { encoder.format = format }
        if let quality { (encoder.jpegQuality, encoder.webpQuality, encoder.avifQuality) = (quality, quality, quality) }

        let jobs: [Job]
        do {
            jobs = try plan(catalog: config.catalog)
        } catch {
            Console.error("thumbd render: \(error.message)")
            return .usage
        }
        let thumbnailer = Thumbnailer(limits: config.limits, tuning: config.shrinkTuning)
        let failures = Mutex<[Int: Failure]>([:])
        let lines = Mutex<[Int: String]>([:])
        let requestEncoder = encoder
        let orientation = appliesOrientation
        // One work item per input: its file is read and decoded once for all its slots and scales.
        let groups = Dictionary(grouping: jobs.indices, by: { jobs[$0].input }).values.sorted { $0[0] < $1[0] }
        let work = Mutex(0)
        let total = jobs.count
        let lanes = min(self.jobs, groups.count)
        // One worker process per lane, as one per render thread in the daemon.
        // A format only the sandbox decodes (video, by its first bytes) takes the sandbox whatever
        // the flag says, in workers that load FFmpeg.
        let videos = Set(jobs.map(\.input)).contains { Self.isVideo($0) }
        let sandboxed = self.sandboxed || videos
        let launch = WorkerLaunch.thumbd(memoryLimitBytes: config.service.workerMemoryBytes)
        let supervisors = sandboxed
            ? (0..<lanes).map { _ in RenderWorkerSupervisor(launch: videos ? launch.loadingVideo() : launch, counters: WorkerRestartCounters()) }
            : []
        let renderSeconds = config.service.renderSeconds
        let runLane: @Sendable (Int) -> Void = { lane in
            while true {
                let next: Int = work.withLock { next in
                    defer { next += 1 }
                    return next
                }
                guard next < groups.count else { return }
                let indices = groups[next]
                let requests = indices.map {
                    ThumbnailRequest(kind: jobs[$0].selection.kind, scale: jobs[$0].scale, encoder: requestEncoder,
                                     appliesOrientation: orientation)
                }
                let results = supervisors.isEmpty
                    ? Self.render(indices.map { jobs[$0] }, requests: requests, thumbnailer: thumbnailer)
                    : Self.render(indices.map { jobs[$0] }, requests: requests, limits: thumbnailer.limits, tuning: thumbnailer.tuning,
                                  in: supervisors[lane], renderSeconds: renderSeconds)
                for (index, result) in zip(indices, results) {
                    switch result {
                    case .success(let line): lines.withLock { $0[index] = line }
                    case .failure(let failure): failures.withLock { $0[index] = failure }
                    }
                }
            }
        }
        // Lane 0 on this thread, the others on threads of their own (the house's helper); a lane
        // whose thread cannot start leaves its inputs to the others (they take from one counter).
        let threads = (1..<max(lanes, 1)).compactMap { lane in
            try? LongLivedThread.start(name: "thumbd-lane-\(lane)") { runLane(lane) }
        }
        if lanes > 0 { runLane(0) }
        for thread in threads { thread.join() }
        for supervisor in supervisors { supervisor.shutdown() }
        var lastFailure: String?
        for index in 0..<total {
            if let line = lines.withLock({ $0[index] }) { Console.out(line) }
            // An input that cannot be read fails every slot alike: say so once.
            if let failure = failures.withLock({ $0[index] }), failure.message != lastFailure {
                Console.error("thumbd: \(failure.message)")
                lastFailure = failure.message
            }
        }
        let allFailures = failures.withLock { $0 }
        guard let first = allFailures.keys.min(), let code = allFailures[first]?.code else { return .ok }
        Console.error("thumbd: \(allFailures.count) of \(total) thumbnails failed")
        return code
    }

    /// Expands inputs × slots × scales into jobs with output paths.
    func plan(catalog: SlotCatalog) throws(UsageError) -> [Job] {
        var selections = [SlotSelection]()
        for slot in slots {
            if slot == "all" {
                selections += catalog.kinds.keys.sorted().compactMap { catalog.kinds[$0] }.map { SlotSelection(kind: $0, scale: nil) }
                continue
            }
            do {
                selections.append(try catalog.resolve(slot))
            } catch {
                throw UsageError(message: error.description)
            }
        }
        var jobs = [Job]()
        for input in inputs {
            for selection in selections {
                for scale in scale.map({ [$0] }) ?? selection.scales {
                    let base = Self.baseName(of: input)
                    jobs.append(Job(input: input, selection: selection, scale: scale,
                                    output: "\(outputFolder)/\(base).\(selection.kind.name)@\(scale)x"))
                }
            }
        }
        if let outputFile {
            guard jobs.count == 1 else {
                throw UsageError(message: "-o writes one file, but this asks for \(jobs.count) (use --out-dir)")
            }
            jobs[0].output = outputFile
        }
        return jobs
    }

    static func baseName(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Renders one job; the output path gets the format's extension unless -o named it.
    /// Renders the jobs of one input from one read and one decode; the output path gets the
    /// format's extension unless -o named it.
    /// Whether the file at `path` is a video by its first bytes (false when it cannot be read:
    /// its render says why).
    static func isVideo(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return SourceFormat.sniff(descriptor: descriptor)?.row.media == .video
    }

    static func render(_ jobs: [Job], requests: [ThumbnailRequest], thumbnailer: Thumbnailer) -> [Result<String, Failure>] {
        let input = jobs[0].input
        let source: SourceBytes
        do {
            source = try SourceBytes.read(path: input, maxBytes: thumbnailer.limits.maxFileBytes)
        } catch {
            let code = ExitCode(ThumbFailure(error))
            return jobs.map { _ in .failure(Failure(message: error.description, code: code)) }
        }
        let thumbnails: [Thumbnail]
        do {
            thumbnails = try thumbnailer.thumbnails(of: source, requests: requests)
        } catch {
            let code = ExitCode(ThumbFailure(error))
            return jobs.map { _ in .failure(Failure(message: "\(input): \(error)", code: code)) }
        }
        return zip(jobs, thumbnails).map { job, thumbnail in write(thumbnail, for: job) }
    }

    /// Writes one thumbnail; the output path gets the format's extension unless -o named it.
    static func write(_ thumbnail: Thumbnail, for job: Job) -> Result<String, Failure> {
        let isNamedOutput = [".jpg", ".jpeg", ".png", ".webp", ".avif"].contains { job.output.hasSuffix($0) }
        let path = isNamedOutput ? job.output : "\(job.output).\(thumbnail.format.fileExtension)"
        do throws(OutputError) {
            try OutputFile.write(thumbnail.bytes, to: path)
        } catch {
            return .failure(Failure(message: "\(error.path): \(error.reason)", code: error.exitCode))
        }
        let warning = thumbnail.warning.map { " (recovered from corrupt data: \($0))" } ?? ""
        return .success("\(path): \(thumbnail.width)x\(thumbnail.height) \(thumbnail.format.rawValue), \(thumbnail.bytes.count) bytes\(warning)")
    }

    struct Failure: Error, Sendable {
        var message: String
        var code: ExitCode
    }
}
