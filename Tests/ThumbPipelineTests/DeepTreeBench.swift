import Foundation
import Testing
@testable import ThumbPipeline
import ThumbSystem
import ThumbTestSupport

/// A chain of `levels` folders (`d/d/d/…`, two path bytes a level) holding `files` tiny `.jpg`
/// files spread evenly over the levels, built descriptor-relative (building it by absolute
/// paths would itself cost depth² in the kernel).
struct DeepTree {
    let base: String
    var root: String { base + "/root" }

    init(levels: Int, files: Int, label: String = "deeptree") throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/root", withIntermediateDirectories: true)
        var folder = open(base + "/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw SystemError(operation: "open \(base)/root", errno: errno) }
        let perLevel = max(1, files / max(1, levels))
        var made = 0
        for level in 0..<levels {
            let count = level == levels - 1 ? max(0, files - made) : min(perLevel, files - made)
            for index in 0..<count {
                let fd = openat(folder, "\(made + index).jpg", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw SystemError(operation: "create file", errno: errno) }
                var byte: UInt8 = 0xFF
                _ = write(fd, &byte, 1)
                close(fd)
            }
            made += count
            guard level < levels - 1 else { break }
            guard mkdirat(folder, "d", 0o755) == 0 else { throw SystemError(operation: "mkdir level \(level)", errno: errno) }
            let next = openat(folder, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            close(folder)
            guard next >= 0 else { throw SystemError(operation: "open level \(level)", errno: errno) }
            folder = next
        }
        close(folder)
    }

    func remove() {
        // `rm -rf` walks descriptor-relative; FileManager's recursion by path is quadratic here.
        _ = try? ChildProcess.run("/bin/rm", ["-rf", base], timeout: 600)
    }
}

/// Thread CPU seconds of `body` (it must not suspend: the thread is what is measured).
func threadCPUSeconds(_ body: () throws -> Void) rethrows -> Double {
    func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
    let start = now()
    try body()
    return now() - start
}

/// Children's CPU seconds (user + system) of running `arguments` to completion.
func childCPUSeconds(_ arguments: [String]) throws -> Double {
    func children() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
    let before = children()
    // Its output to /dev/null: writing it would be CPU of its own.
    let child = try ChildProcess(arguments[0], Array(arguments.dropFirst()))
    child.end(within: 600)
    return children() - before
}

/// Start-up cost on deep trees (issue 11 item 1), printed, never asserted: run with
/// `THUMBD_DEEP_TREE_BENCH=1 swift test -c release -Xswiftc -enable-testing --skip-build --filter DeepTreeBench`
/// (`THUMBD_DEEP_TREE_FILES`, default 10000, files per tree; `THUMBD_DEEP_TREE_LEVELS`, default
/// 100,200,400,1000). CPU seconds of the calling thread for the scan, the watcher's start
/// (every folder watched and listed) and the pipeline's reconcile (a scan, then one pre-render
/// queued per file: what start-up does before it renders), beside GNU find over the same tree
/// (`-printf` of size, mtime and inode: it lstats every file, walking descriptor-relative) as
/// the peer.
@Suite struct DeepTreeBench {
    static let enabled = ProcessInfo.processInfo.environment["THUMBD_DEEP_TREE_BENCH"] != nil

    @Test(.enabled(if: enabled)) func startUpCostByDepth() throws {
        let environment = ProcessInfo.processInfo.environment
        let files = environment["THUMBD_DEEP_TREE_FILES"].flatMap { Int($0) } ?? 10_000
        let levels = (environment["THUMBD_DEEP_TREE_LEVELS"] ?? "100,200,400,1000").split(separator: ",").compactMap { Int($0) }
        print("levels  files  scan_s  watch_s  reconcile_s  find_s  (scan+watch+reconcile)/find")
        for depth in levels {
            let tree = try DeepTree(levels: depth, files: files)
            defer { tree.remove() }
            let root = try AssetRoot(path: tree.root)
            var found = 0
            let scan = threadCPUSeconds { found = AssetScanner.scanReportingFailures(root).versions.count }
            let watcher = try FolderWatcher(root: root, log: .discard) { _ in }
            let watch = try threadCPUSeconds { try watcher.start() }
            let watched = watcher.watchedFolders.count
            watcher.stop()
            var configuration = PipelineConfiguration(assetRoot: tree.root, cacheDirectory: tree.base + "/cache")
            configuration.pregenerated = [(PipelineFixture.avatar, 3)]
            configuration.maxQueuedJobs = files * 2 + 16  // batch may fill three quarters
            configuration.log = .discard
            let pipeline = try ThumbnailPipeline(configuration: configuration, startsWorkers: false)
            let reconcile = threadCPUSeconds { pipeline.follower.reconcile() }
            let queued = pipeline.metrics.queuedJobs.values.reduce(0, +)
            pipeline.shutdown()
            let find = try childCPUSeconds(["/usr/bin/find", tree.root, "-type", "f", "-printf", "%s %T@ %i\n"])
            print(String(format: "%6d %6d %7.3f %8.3f %12.3f %7.3f %8.2f", depth, found, scan, watch, reconcile, find,
                         (scan + watch + reconcile) / max(find, 1e-6)))
            #expect(found == files && watched == depth && queued == files)
        }
    }
}

/// `rm -rf` of a watched tree of 10k images in 101 folders beside an index of `THUMBD_REMOVAL_ROWS`
/// (default 10000,100000,1000000) other rows (issue 11 item 3: 1.8 s at 10k rows, 140 s at 1M
/// before), printed, never asserted: `THUMBD_REMOVAL_BENCH=1 swift test … --filter RemovalBench`.
/// Wall seconds from the `rm` to the last row of the tree gone, the watcher thread's events, and
/// the index statements it ran.
@Suite struct RemovalBench {
    static let enabled = ProcessInfo.processInfo.environment["THUMBD_REMOVAL_BENCH"] != nil

    @Test(.enabled(if: enabled)) func rmRfOfTenThousandFiles() async throws {
        let sizes = (ProcessInfo.processInfo.environment["THUMBD_REMOVAL_ROWS"] ?? "10000,100000,1000000").split(separator: ",").compactMap { Int($0) }
        print("index_rows  files  folders  rm_rf_s  events  vm_steps  full_scan_steps")
        for rows in sizes {
            let fixture = try PipelineFixture()
            var paths: [String] = []
            for folder in 0..<100 {
                try FileManager.default.createDirectory(atPath: "\(fixture.assets)/tree/f\(folder)", withIntermediateDirectories: true)
                for file in 0..<100 {
                    let path = "tree/f\(folder)/\(file).jpg"
                    FileManager.default.createFile(atPath: fixture.assets + "/" + path, contents: Data([0xFF]))
                    paths.append(path)
                }
            }
            let pipeline = try fixture.pipeline(paused: true) { $0.log = .discard }
            pipeline.stores.thumbnails.insertRowsForTesting((0..<rows).map { "other/\($0 % 1000)/\($0).jpg" })
            pipeline.stores.thumbnails.insertRowsForTesting(paths)
            let watcher = try FolderWatcher(root: pipeline.assets, log: .discard, rootPollSeconds: 0.05) { [weak pipeline] in pipeline?.follower.handle($0) }
            try watcher.start()
            let before = pipeline.stores.thumbnails.stepsForTesting
            let events = pipeline.metrics.watcherEvents
            let started = ContinuousClock.now
            _ = try ChildProcess.run("/bin/rm", ["-rf", fixture.assets + "/tree"], timeout: 600)
            // Done when the tree's own folder event has been handled (its rows are gone then).
            while pipeline.metrics.watcherEvents - events < 10_101 && ContinuousClock.now - started < .seconds(600) {
                try await Task.sleep(for: .milliseconds(2))
            }
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            let after = pipeline.stores.thumbnails.stepsForTesting
            let left = pipeline.stores.thumbnails.assetPaths(under: "tree").count
            watcher.stop()
            pipeline.shutdown()
            print(String(format: "%10d %6d %8d %8.2f %7d %9d %16d", rows, paths.count, 101, seconds, pipeline.metrics.watcherEvents - events,
                         after.virtualMachine - before.virtualMachine, after.fullScan - before.fullScan))
            #expect(left == 0)
        }
    }
}
