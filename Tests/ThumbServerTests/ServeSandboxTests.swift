import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd serve` with its renders in sandboxed worker processes, driven through the test worker
/// (`thumbd-test-worker`: the production worker plus a fault hook that a file beginning
/// `THUMBD-FAULT:<word>\n` sets off). A worker that traps, loops, exhausts its memory or dies
/// mid-answer costs the requests it held; the daemon answers everything else meanwhile.
@Suite("thumbd serve: sandboxed render workers", .serialized)
struct ServeSandboxTests {
    static func testWorker() throws -> String {
        try TestPaths.builtExecutable("thumbd-test-worker")
    }

    /// A daemon on a few real photos whose workers are test workers.
    static func start(renderSeconds: Double = 2, workerMemoryBytes: Int = 1 << 30, assets: [String: String] = [:]) throws -> ServeDaemon {
        let photos = try ServePaths.largePhotos()
        let limits: [String: Any] = ["renderSeconds": renderSeconds, "workerMemoryBytes": workerMemoryBytes]
        let daemon = try ServeDaemon(config: ServeDaemon.config(extra: ["limits": limits]),
                                     assets: ["good.jpg": photos[0], "fresh.jpg": photos[1]].merging(assets) { _, new in new })
        try daemon.start(environment: ["THUMBD_WORKER_EXECUTABLE": try testWorker()])
        return daemon
    }

    static func writeFault(_ word: String, named name: String, in daemon: ServeDaemon) throws {
        // A distinct tail per file: each is its own asset version, so each is its own render.
        try Data("THUMBD-FAULT:\(word)\n\(name)\n".utf8).write(to: URL(fileURLWithPath: daemon.assets + "/" + name))
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }

    static func errorCode(_ response: ServeResponse) -> String {
        (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["error"] as? String ?? ""
    }

    @Test("a storm of 50 worker crashes: each costs its request (500 renderCrashed, remembered, counted), cache hits stay fast")
    func crashStorm() throws {
        let daemon = try Self.start()
        let pid = try #require(daemon.child?.pid)
        let names = (0..<50).map { "trap-\($0).jpg" }
        for name in names { try Self.writeFault("trap", named: name, in: daemon) }
        let warm = try daemon.request("/v1/thumbnails/large/good.jpg")
        #expect(warm.status == 200)
        let endpoint = ServeEndpoint.unix(daemon.socket)
        func hit() throws -> Double {
            let start = ContinuousClock.now
            let answer = ServeRaw.get(endpoint, "/v1/thumbnails/large/good.jpg", timeout: 5)
            guard answer.status == 200 else { throw TestFailure("a cache hit failed: \(answer)") }
            return (ContinuousClock.now - start) / .seconds(1)
        }
        // Hits paced one per millisecond (a client's load, not a flood that would starve the
        // renders it is meant to watch), idle before and after the storm: the baseline is the
        // worse of the two, so that noise from the rest of a parallel test run counts against
        // both sides alike.
        func hits(while busy: () -> Bool, atLeast count: Int) throws -> [Double] {
            var seconds: [Double] = []
            let start = Date()
            while (busy() || seconds.count < count) && Date().timeIntervalSince(start) < 120 {
                seconds.append(try hit())
                usleep(1_000)
            }
            return seconds
        }
        let before = try hits(while: { false }, atLeast: 300)
        let storm = try ServeCurl.startBatch(socket: daemon.socket, names.map { "/v1/thumbnails/large/\($0)" }, timeout: 60)
        let during = try hits(while: { storm.child.isRunning }, atLeast: 100)
        let results = try storm.finish()
        let after = try hits(while: { false }, atLeast: 300)
        #expect(results.allSatisfy { $0.status == 500 }, "\(results.filter { $0.status != 500 }.prefix(5))")
        let idleP99 = max(Self.percentile(before, 0.99), Self.percentile(after, 0.99)), stormP99 = Self.percentile(during, 0.99)
        print("cache-hit p99: idle \(idleP99 * 1000) ms, during 50 worker crashes \(stormP99 * 1000) ms (\(during.count) hits)")
        // Under 3x idle (0.35 ms against 0.53 ms when this suite runs alone). In a parallel test
        // run the 2-core machine's scheduler alone puts millisecond spikes into any p99 (2.8 ms
        // against 0.8 ms seen so), so 10 ms is the floor: a hit that waited for a worker, a spawn
        // or a render would show tens of milliseconds.
        #expect(stormP99 < max(3 * idleP99, 0.010), "hit p99 \(stormP99 * 1000) ms during the storm against \(idleP99 * 1000) ms idle")

        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_worker_restarts_total{reason=\"signal\"}"] >= 50, "\(metrics.text)")
        // One crash is the JSON failure the table names, and it is remembered: asking again
        // answers from the negative entry, with no worker harmed.
        let again = try daemon.request("/v1/thumbnails/large/trap-0.jpg")
        #expect(again.status == 500 && Self.errorCode(again) == "renderCrashed", "\(again.text)")
        #expect(again.text.contains("SIGILL") || again.text.contains("SIGTRAP"), "\(again.text)")
        #expect(try daemon.metrics()["thumbd_worker_restarts_total{reason=\"signal\"}"]
                == metrics["thumbd_worker_restarts_total{reason=\"signal\"}"])
        // The pool is back: a cold render of a real photo works, and the daemon never restarted.
        #expect(try daemon.request("/v1/thumbnails/large/fresh.jpg").status == 200)
        #expect(daemon.isRunning && daemon.child?.pid == pid)
        #expect(daemon.log.contains("trap-7.jpg: the render worker died on it"), "\(daemon.log.suffix(2000))")
        #expect(daemon.stop() == 0)
    }

    @Test("a loop past limits.renderSeconds, a memory bomb and an answer cut short each cost one request; the pool recovers")
    func deadlineMemoryAndTornAnswers() throws {
        // 512 MiB: the memory bomb meets its limit well before the deadline.
        let daemon = try Self.start(renderSeconds: 1.5, workerMemoryBytes: 512 << 20)
        try Self.writeFault("loop", named: "loop.jpg", in: daemon)
        try Self.writeFault("alloc", named: "alloc.jpg", in: daemon)
        try Self.writeFault("exit-mid-answer", named: "torn.jpg", in: daemon)

        let loop = try daemon.request("/v1/thumbnails/large/loop.jpg", timeout: 10)
        #expect(loop.status == 500 && Self.errorCode(loop) == "renderTimedOut", "\(loop.text)")
        #expect(loop.seconds < 1.5 + 1, "answered after \(loop.seconds) s")
        #expect(loop.text.contains("1.5 s"), "\(loop.text)")
        let remembered = try daemon.request("/v1/thumbnails/large/loop.jpg", timeout: 10)
        #expect(Self.errorCode(remembered) == "renderTimedOut" && remembered.seconds < 1, "\(remembered.text)")

        let alloc = try daemon.request("/v1/thumbnails/large/alloc.jpg", timeout: 10)
        #expect(alloc.status == 500 && Self.errorCode(alloc) == "renderCrashed", "\(alloc.text)")
        let torn = try daemon.request("/v1/thumbnails/large/torn.jpg", timeout: 10)
        #expect(torn.status == 500 && Self.errorCode(torn) == "renderCrashed" && torn.text.contains("mid"), "\(torn.text)")

        #expect(try daemon.request("/v1/thumbnails/large/good.jpg").status == 200)
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_worker_restarts_total{reason=\"timeout\"}"] == 1, "\(metrics.text)")
        #expect(metrics["thumbd_worker_restarts_total{reason=\"signal\"}"] + metrics["thumbd_worker_restarts_total{reason=\"exited\"}"]
                + metrics["thumbd_worker_restarts_total{reason=\"malformed\"}"] >= 2, "\(metrics.text)")
        #expect(daemon.isRunning)
        #expect(daemon.stop() == 0)
    }

    @Test("a worker's stderr reaches the log through a pipe: prefixed, escaped and bounded (issue 23, finding 9)")
    func workerStderrIsRelayedNotShared() throws {
        let daemon = try Self.start()
        try Self.writeFault("stderr-flood", named: "flood.jpg", in: daemon)
        let answer = try daemon.request("/v1/thumbnails/large/flood.jpg", timeout: 10)
        #expect(answer.status == 415 && answer.text.contains("flooded"), "\(answer.text)")
        #expect(try daemon.request("/v1/thumbnails/large/good.jpg").status == 200, "the worker lives on")
        try servePoll(timeout: 10, "the relayed lines") { daemon.log.contains("EMERGENCY forged") }
        #expect(daemon.stop() == 0)
        let log = daemon.log
        let lines = log.split(separator: "\n")
        // No line of the worker's stands on its own: each is the daemon's, naming the worker.
        #expect(!lines.contains { $0.hasPrefix("<0>") }, "\(log.suffix(2000))")
        #expect(!log.unicodeScalars.contains { $0 == "\u{1b}" || $0 == "\r" }, "control characters reached the log")
        let relayed = lines.filter { $0.contains("render worker") && $0.contains("wrote") }
        #expect(relayed.contains { $0.contains("x\\x0d<0>EMERGENCY forged by a worker") }, "\(relayed)")
        // 1 MiB written; a pipe's worth at most read, a few lines kept.
        #expect(relayed.count <= 16 && log.utf8.count < 64 << 10, "\(relayed.count) lines, log \(log.utf8.count) bytes")
    }

    @Test("a decoder out of memory under limits.workerMemoryBytes is 413 tooLarge naming the limit, not 415 (issue 23, finding 7)")
    func outOfMemoryIsTooLargeNotUndecodable() throws {
        // A 15000 x 15000 lossless WebP (2 MB): libwebp keeps the whole ARGB frame (900 MB), past a
        // 256 MiB worker; the default limit (4 GiB) renders it.
        let scratch = try ScratchDirectory("oom")
        defer { scratch.remove() }
        let source = scratch.path("huge.webp")
        let python = try ChildProcess.run("/usr/bin/env", ["python3", "-c", """
            import sys
            from PIL import Image, ImageDraw
            im = Image.new('RGBA', (15000, 15000), (200, 100, 50, 255))
            ImageDraw.Draw(im).rectangle((1000, 1000, 5000, 7000), fill=(20, 160, 90, 128))
            im.save(sys.argv[1], lossless=True, quality=0, method=0)
            """, source], timeout: 300)
        try #require(python.exitCode == 0, "python3 with Pillow is needed to write the WebP: \(python.summary)")

        let small = try ServeDaemon(config: ServeDaemon.config(extra: ["limits": ["workerMemoryBytes": 256 << 20]]),
                                    assets: ["huge.webp": source])
        try small.start()
        let refused = try small.request("/v1/thumbnails/large/huge.webp", timeout: 60)
        #expect(refused.status == 413 && Self.errorCode(refused) == "tooLarge", "\(refused.text)")
        #expect(refused.text.contains("workerMemoryBytes"), "\(refused.text)")
        #expect(small.stop() == 0)

        let roomy = try ServeDaemon(assets: ["huge.webp": source])
        try roomy.start()
        let rendered = try roomy.request("/v1/thumbnails/large/huge.webp", timeout: 60)
        #expect(rendered.status == 200, "\(rendered.text)")
        #expect(roomy.stop() == 0)
    }

    @Test("a worker cannot open a file or a socket (EPERM), and holds no descriptor but its socket")
    func workerHasNothingToLose() throws {
        let daemon = try Self.start()
        try Self.writeFault("open-file", named: "open.jpg", in: daemon)
        try Self.writeFault("descriptors", named: "fds.jpg", in: daemon)
        let open = try daemon.request("/v1/thumbnails/large/open.jpg")
        #expect(open.text.contains("open: EPERM") && open.text.contains("socket: EPERM"), "\(open.text)")
        let descriptors = try daemon.request("/v1/thumbnails/large/fds.jpg")
        // 0–2 (/dev/null, /dev/null, the daemon's stderr) and 3, its socket: the source it was
        // passed is closed once read, before any decoder sees a byte.
        let listed = descriptors.text.components(separatedBy: "descriptors: ").last ?? ""
        let numbers = listed.split(separator: " ").compactMap { Int($0.split(separator: ":").first ?? "") }
        #expect(numbers == [0, 1, 2, 3] && listed.contains("3:sock"), "\(listed) in \(descriptors.text)")
        #expect(daemon.stop() == 0)
    }

    @Test("the corpus (decode and fail alike) and hostile requests through the sandboxed daemon: answers as the manifest says, no worker crash, one daemon")
    func corpusWalkThroughWorkers() throws {
        var expected: [String: Bool] = [:]
        var assets: [String: String] = [:]
        for row in try CorpusManifest.jpegAndPNG() where ["OK", "WARN", "ERROR"].contains(row.status) {
            assets[row.relativePath] = row.path
            // A HEIC under a .jpg name is an ERROR of that manifest (of JPEG decoders): thumbd reads it by content.
            let head = [UInt8]((FileManager.default.contents(atPath: row.path) ?? Data()).prefix(12))
            let isHEIF = head.count == 12 && head[4..<8].elementsEqual(Array("ftyp".utf8))
            expected[row.relativePath] = row.status != "ERROR" || isHEIF
        }
        // The WebP, GIF, HEIF and AVIF files too: the new decoders run in the same workers.
        for row in try CorpusManifest.otherFormats() where ["OK", "ERROR"].contains(row.status) {
            assets[row.relativePath] = row.path
            expected[row.relativePath] = row.status == "OK"
        }
        #expect(expected.count > 660)
        let daemon = try ServeDaemon(config: ServeDaemon.config(), assets: assets)
        try daemon.start() // the production worker: `thumbd` itself
        let pid = try #require(daemon.child?.pid)
        let names = expected.keys.sorted()
        // Names such as "issue#403.png" go percent-encoded (the daemon decodes the path itself).
        let encoded = Dictionary(uniqueKeysWithValues: names.map {
            ("/v1/thumbnails/normal/" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "/._-"))) ?? $0), $0)
        })
        let paths = encoded.keys.sorted()
        for chunk in stride(from: 0, to: paths.count, by: 100) {
            let part = Array(paths[chunk..<min(chunk + 100, paths.count)])
            let results = try ServeCurl.startBatch(socket: daemon.socket, part, timeout: 120).finish()
            for result in results {
                let name = encoded[result.path] ?? result.path
                if expected[name] == true {
                    #expect(result.status == 200, "\(name): \(result.status)")
                } else {
                    #expect((400..<500).contains(result.status), "\(name): \(result.status)")
                }
            }
        }
        // The previous issue's hostile HTTP requests, replayed raw.
        let regressions = ServePaths.packageRoot + "/Tests/FuzzRegressions/http-request"
        for file in (try? FileManager.default.contentsOfDirectory(atPath: regressions)) ?? [] where !file.hasSuffix(".md") {
            let bytes = try String(decoding: Data(contentsOf: URL(fileURLWithPath: regressions + "/" + file)), as: UTF8.self)
            _ = ServeRaw.exchange(.unix(daemon.socket), bytes, timeout: 5)
        }
        let metrics = try daemon.metrics()
        #expect(metrics.sum("thumbd_worker_restarts_total") == 0, "\(metrics.text)")
        #expect(metrics["thumbd_worker_spawns_total"] == 2)
        #expect(daemon.isRunning && daemon.child?.pid == pid)
        #expect(daemon.stop() == 0)
    }

    @Test("thumbd render --sandbox: the same bytes as in-process; a worker crash fails its input only (exit 70)")
    func renderSandboxed() throws {
        let photo = try ServePaths.largePhotos()[0]
        let scratch = try ScratchDirectory("render-sandbox")
        defer { scratch.remove() }
        let folder = scratch.path
        let trap = folder + "/trap.jpg"
        try Data("THUMBD-FAULT:trap\n".utf8).write(to: URL(fileURLWithPath: trap))
        func render(_ inputs: [String], into out: String, sandbox: Bool, environment: [String: String] = [:]) throws -> Int32? {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let child = try ChildProcess(try ServePaths.thumbd(), ["render"] + inputs + ["--slot", "large", "--out-dir", out]
                                         + (sandbox ? ["--sandbox"] : []),
                                         environment: ChildProcess.cleanEnvironment.merging(environment) { _, new in new },
                                         stdout: .file(out + "/stdout"), stderr: .file(out + "/stderr"))
            return child.wait(timeout: 60)?.status
        }
        #expect(try render([photo], into: folder + "/in", sandbox: false) == 0)
        #expect(try render([photo], into: folder + "/out", sandbox: true) == 0)
        let base = URL(fileURLWithPath: photo).deletingPathExtension().lastPathComponent
        let inProcess = try Data(contentsOf: URL(fileURLWithPath: folder + "/in/\(base).large@1x.jpg"))
        let sandboxed = try Data(contentsOf: URL(fileURLWithPath: folder + "/out/\(base).large@1x.jpg"))
        #expect(!inProcess.isEmpty && inProcess == sandboxed)
        let status = try render([trap, photo], into: folder + "/fault", sandbox: true,
                                environment: ["THUMBD_WORKER_EXECUTABLE": try Self.testWorker()])
        #expect(status == 70)
        let errors = (try? String(contentsOfFile: folder + "/fault/stderr", encoding: .utf8)) ?? ""
        #expect(errors.contains("trap.jpg: the renderer died on this file"), "\(errors)")
        #expect(FileManager.default.fileExists(atPath: folder + "/fault/\(base).large@1x.jpg"))
    }
}
