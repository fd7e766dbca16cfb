// The scroll simulation: 24 cells of one client over 2,000 assets, reassigned as a fast fling
// would (every cell gets a new asset every 16 ms for 5 s), then the scroll stops.
//
//   swift run -c release scroll-bench [--assets 2000] [--slots 24] [--interval-ms 16] [--seconds 5] [--in-process]
//
// Renders run in sandboxed worker processes (the `thumbd` binary beside this one, as the daemon
// runs them); --in-process renders in the pipeline's threads (`sandbox: false`).
//
// Prints stale deliveries, CPU spent on work nobody waited for (with and without cancellation),
// the settle time after the stop against a cold render of 24 thumbnails, and cache-hit latency.
import Foundation
import Synchronization
import ThumbImaging
import ThumbPipeline
import ThumbWorker

struct Options {
    var assets = 2_000
    var slots = 24
    var intervalMilliseconds = 16
    var seconds = 5.0
    var inProcess = false
    var corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/corpus").standardized.path

    init(_ arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--in-process" {
                inProcess = true
                continue
            }
            let value = iterator.next() ?? ""
            switch argument {
            case "--assets": assets = Int(value) ?? assets
            case "--slots": slots = Int(value) ?? slots
            case "--interval-ms": intervalMilliseconds = Int(value) ?? intervalMilliseconds
            case "--seconds": seconds = Double(value) ?? seconds
            case "--corpus": corpus = value
            default: fatalError("unknown option \(argument)")
            }
        }
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let avatar = SlotKind(name: "contact-avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: .fill, mask: .circle)
let work = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-scroll-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: work) }

/// Asset folder: corpus images that must decode (manifest OK, under 1.5 MB), hard-linked (or
/// copied) under 2,000 distinct names.
func makeAssets() throws -> [String] {
    let manifest = try String(contentsOfFile: options.corpus + "/manifest.tsv", encoding: .utf8)
    var sources: [String] = []
    for line in manifest.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count > 6, fields[6] == "OK", fields[4] == "JPEG" || fields[4] == "PNG",
              let bytes = Int(fields[2]), bytes < 1_500_000 else { continue }
        sources.append(options.corpus + "/" + fields[0] + "/" + fields[1])
    }
    try FileManager.default.createDirectory(atPath: work + "/assets", withIntermediateDirectories: true)
    var names: [String] = []
    for index in 0..<options.assets {
        let source = sources[index % sources.count]
        let name = String(format: "asset-%05d.", index) + (source.lowercased().hasSuffix(".png") ? "png" : "jpg")
        if link(source, work + "/assets/" + name) != 0 {
            try FileManager.default.copyItem(atPath: source, toPath: work + "/assets/" + name)
        }
        names.append(name)
    }
    return names
}

func makePipeline(cancelling: Bool, cache: String) throws -> ThumbnailPipeline {
    var configuration = PipelineConfiguration(assetRoot: work + "/assets", cacheDirectory: work + "/" + cache)
    configuration.cancelsAbandonedWork = cancelling
    configuration.maxQueuedJobs = 20_000
    if !options.inProcess {
        let thumbd = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path + "/thumbd"
        configuration.worker = WorkerLaunch(executablePath: thumbd, arguments: [WorkerLaunch.workerSubcommand],
                                            memoryLimitBytes: 4 << 30)
    }
    return try ThumbnailPipeline(configuration: configuration)
}

struct FlingResult {
    /// The stall probe's worst lateness during the fling.
    var stallSeconds = 0.0
    var stale = 0
    var requests = 0
    var settleSeconds = 0.0
    var wastedCPU = 0.0
    var renderCPU = 0.0
    var renders = 0
    var dropped = 0
    var aborted = 0
    var parked = 0
    var wastedRenders = 0
    var cancelLatencyMax = 0.0
    var cancelLatencyMean = 0.0
}

final class FlingLog: Sendable {
    struct State {
        /// Per cell, the token of the newest request whose `submit` has returned.
        var returned: [Int: UInt64] = [:]
        var stale = 0
        /// Per cell, the newest token answered and when.
        var answered: [Int: (token: UInt64, at: ContinuousClock.Instant)] = [:]
    }
    let state = Mutex(State())
}

/// The machine's own stalls, in the same run: a thread that asks to sleep 1 ms at a time and
/// records how late it wakes. A render cancelled during such a stall cannot answer sooner, so
/// the worst cancel latency is read beside it (both are wall times on a shared 2-core machine).
final class StallProbe: Sendable {
    private let state = Mutex((running: true, worstLateSeconds: 0.0))
    private let done = DispatchSemaphore(value: 0)

    init() {
        Thread { [self] in
            while state.withLock({ $0.running }) {
                let start = ContinuousClock.now
                usleep(1000)
                let late = (ContinuousClock.now - start - .milliseconds(1)) / .seconds(1)
                state.withLock { $0.worstLateSeconds = max($0.worstLateSeconds, late) }
            }
            done.signal()
        }.start()
    }

    /// Stops the probe; its worst lateness, seconds.
    func stop() -> Double {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { $0.worstLateSeconds }
    }
}

func fling(_ pipeline: ThumbnailPipeline, assets: [String]) async -> FlingResult {
    let log = FlingLog()
    let probe = StallProbe()
    let ticks = Int(options.seconds * 1000) / options.intervalMilliseconds
    let clock = ContinuousClock()
    let start = clock.now
    var requests = 0
    var finalTokens: [Int: UInt64] = [:]
    var stop = clock.now
    for tick in 0..<ticks {
        for slot in 0..<options.slots {
            let asset = assets[(tick * options.slots + slot) % assets.count]
            let slotID = SlotID(client: "app", slot: "cell-\(slot)")
            let token = pipeline.submit(.init(assetPath: asset, kind: avatar, scale: 3, priority: .visible, slot: slotID)) { response in
                // Completions run outside the pipeline's lock, on worker threads or inside
                // submit. Bytes for a token older than one whose submit already returned would
                // be a stale delivery (the pipeline's delivery gate promises there are none).
                log.state.withLock { state in
                    guard let token = response.token else { return }
                    if case .success = response.result, token < state.returned[slot, default: 0] { state.stale += 1 }
                    if token >= state.answered[slot]?.token ?? 0 { state.answered[slot] = (token, clock.now) }
                }
            }
            requests += 1
            if let token {
                log.state.withLock { $0.returned[slot] = token }
                finalTokens[slot] = token
            }
        }
        if tick == ticks - 1 {
            stop = clock.now // the scroll stops: these are the cells' final assets
            break
        }
        let next = start + .milliseconds((tick + 1) * options.intervalMilliseconds)
        try? await Task.sleep(until: next, clock: clock)
    }
    // The scroll stopped: wait for the final request of every cell.
    func settledAll() -> Bool {
        log.state.withLock { state in finalTokens.allSatisfy { state.answered[$0.key]?.token == $0.value } }
    }
    while !settledAll() && clock.now - stop < .seconds(60) { try? await Task.sleep(for: .milliseconds(1)) }
    let settled = log.state.withLock { state in finalTokens.keys.compactMap { state.answered[$0]?.at }.max() } ?? clock.now
    // Let abandoned work drain so that all of it is counted (without cancellation, every
    // queued job still runs).
    while pipeline.metrics.runningJobs > 0 || pipeline.metrics.queuedJobs.values.reduce(0, +) > 0 {
        try? await Task.sleep(for: .milliseconds(5))
    }
    let metrics = pipeline.metrics
    let stall = probe.stop()
    return FlingResult(stallSeconds: stall, stale: log.state.withLock { $0.stale }, requests: requests,
                       settleSeconds: max(0, (settled - stop) / .seconds(1)), wastedCPU: metrics.wastedCPUSeconds,
                       renderCPU: metrics.renderCPUSeconds, renders: metrics.renders, dropped: metrics.droppedJobs,
                       aborted: metrics.abortedRenders, parked: metrics.parkedJobs, wastedRenders: metrics.wastedRenders,
                       cancelLatencyMax: metrics.cancelLatencySecondsMax,
                       cancelLatencyMean: metrics.cancelLatencySecondsSum / Double(max(1, metrics.cancelLatencyCount)))
}

/// The assets the cells show when the scroll stops.
func finalAssets(_ assets: [String]) -> [String] {
    let ticks = Int(options.seconds * 1000) / options.intervalMilliseconds
    return (0..<options.slots).map { assets[((ticks - 1) * options.slots + $0) % assets.count] }
}

/// Time to render the final 24 thumbnails cold, all asked at once.
func coldRender(assets: [String]) async throws -> Double {
    let pipeline = try makePipeline(cancelling: true, cache: "cache-cold")
    // Warm up (threads started, code paged in) on an asset that is not measured.
    _ = await pipeline.thumbnail(.init(assetPath: "asset-00000.jpg", kind: avatar, scale: 3))
    let clock = ContinuousClock()
    let start = clock.now
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<options.slots {
            group.addTask { _ = await pipeline.thumbnail(.init(assetPath: assets[index], kind: avatar, scale: 3)) }
        }
    }
    let seconds = (clock.now - start) / .seconds(1)
    pipeline.shutdown()
    return seconds
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

let assets = try makeAssets()
print("scroll simulation: \(options.slots) cells, \(assets.count) assets, a new asset per cell every \(options.intervalMilliseconds) ms for \(options.seconds) s, \(System.processorCount) workers")
let cold = try await coldRender(assets: finalAssets(assets))
let cancelling = try makePipeline(cancelling: true, cache: "cache-cancel")
let withCancel = await fling(cancelling, assets: assets)
let baseline = try makePipeline(cancelling: false, cache: "cache-nocancel")
let withoutCancel = await fling(baseline, assets: assets)
baseline.shutdown()

// Second pass: everything the first pass delivered is cached; ask again and time each hit.
var latencies: [Double] = []
let cachedAssets = finalAssets(assets)
for round in 0..<2_000 {
    let asset = cachedAssets[round % cachedAssets.count]
    let start = ContinuousClock.now
    let response = await cancelling.thumbnail(.init(assetPath: asset, kind: avatar, scale: 3))
    if case .success = response.result { latencies.append((ContinuousClock.now - start) / .microseconds(1)) }
}
cancelling.shutdown()

func line(_ name: String, _ result: FlingResult) -> String {
    String(format: "%-16@ requests %5d  stale %d  parked %5d  dropped %5d  renders %4d (wasted %4d, aborted %3d, worst cancel latency %.1f ms)  render CPU %6.2f s  wasted CPU %6.2f s  settle %4.0f ms",
           name, result.requests, result.stale, result.parked, result.dropped, result.renders, result.wastedRenders, result.aborted,
           result.cancelLatencyMax * 1000, result.renderCPU, result.wastedCPU, result.settleSeconds * 1000)
}
print(line("cancellation on", withCancel))
print(line("cancellation off", withoutCancel))
let wastedRatio = withoutCancel.wastedCPU > 0 ? withCancel.wastedCPU / withoutCancel.wastedCPU : 0
print(String(format: "wasted work with cancellation: %.1f%% of the no-cancel run's (target <= 10%%)", wastedRatio * 100))
print(String(format: "cancel latency (cancel to decode stopped): mean %.2f ms, worst %.1f ms (target <= 5); the stall probe's worst lateness meanwhile %.1f ms",
             withCancel.cancelLatencyMean * 1000, withCancel.cancelLatencyMax * 1000, withCancel.stallSeconds * 1000))
print(String(format: "settle after the stop: %.0f ms; cold render of %d thumbnails: %.0f ms; ratio %.2f (target <= 2)",
             withCancel.settleSeconds * 1000, options.slots, cold * 1000, withCancel.settleSeconds / cold))
print(String(format: "cache-hit latency (second pass, %d hits): p50 %.0f µs, p99 %.0f µs",
             latencies.count, percentile(latencies, 0.5), percentile(latencies, 0.99)))
print("stale deliveries: \(withCancel.stale + withoutCancel.stale) (must be 0)")
