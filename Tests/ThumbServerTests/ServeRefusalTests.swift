import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The refusals of `thumbd serve`: 403 (paths out of the root, proven unread), 413, 415, 503
/// when the queue is full, 504 when `wait` runs out (and the render goes on).
@Suite("thumbd serve: refusals")
struct ServeRefusalTests {
    @Test("403 for .., %2e%2e, absolute paths and symlinks out of the root, without reading them")
    func pathsOutsideTheRootAreRefusedUnread() throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(extra: ["cache": ["directory": "assets/thumbs"]]),
                                     assets: ["photos/small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        // Outside the root: a FIFO (opening it for reading would block until a writer comes) and
        // a copy of a real image (so that a wrongly followed link would render, not fail).
        let outside = daemon.directory + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        #expect(mkfifo(outside + "/fifo", 0o644) == 0)
        try FileManager.default.copyItem(atPath: ServePaths.samples + "/pngsuite-basn6a08-alpha.png", toPath: outside + "/secret.png")
        let links = ["hostname.jpg": "/etc/hostname", "fifo.jpg": outside + "/fifo", "secret.png": outside + "/secret.png",
                     "photos/up.png": "../../outside/secret.png"]
        for (name, target) in links {
            try FileManager.default.createSymbolicLink(atPath: daemon.assets + "/" + name, withDestinationPath: target)
        }
        #expect(mkfifo(daemon.assets + "/pipe.png", 0o644) == 0) // inside, but not a regular file
        try daemon.start()

        let refused = ["/v1/thumbnails/large/../outside/secret.png", "/v1/thumbnails/large/photos/../../outside/secret.png",
                       "/v1/thumbnails/large/%2e%2e/outside/secret.png", "/v1/thumbnails/large/photos/%2E%2E/%2e%2e/thumbd.json",
                       "/v1/thumbnails/large/..%2foutside%2fsecret.png", "/v1/thumbnails/large//etc/passwd",
                       "/v1/thumbnails/large/%2fetc%2fpasswd", "/v1/thumbnails/large/hostname.jpg",
                       "/v1/thumbnails/large/fifo.jpg", "/v1/thumbnails/large/secret.png",
                       "/v1/thumbnails/large/photos/up.png", "/v1/thumbnails/large/pipe.png"]
        for path in refused {
            let response = try daemon.request(path, timeout: 10)
            #expect(response.status == 403 && response.errorCode == "forbidden", "\(path): \(response.summary)")
        }
        // Nobody has the FIFOs open for reading: a non-blocking open for writing fails with ENXIO.
        for fifo in [outside + "/fifo", daemon.assets + "/pipe.png"] {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            #expect(writer == -1 && errno == ENXIO, "\(fifo) is open for reading")
            if writer >= 0 { close(writer) }
        }
        let inside = try daemon.request("/v1/thumbnails/large/photos/./small.png")
        #expect(inside.status == 403, "'.' is refused too: \(inside.summary)")

        let metrics = try daemon.metrics()
        #expect(metrics.requests("thumbnails", 403) == refused.count + 1, "\(metrics.text)")
        #expect(metrics["thumbd_cache_misses_total"] == 0 && metrics["thumbd_render_seconds_count"] == 0,
                "a refused path got as far as the cache or a render:\n\(metrics.text)")
        let ok = try daemon.request("/v1/thumbnails/large/photos/small.png?as=path")
        #expect(ok.status == 200, "\(ok.summary)")
        // The cache lives inside the asset folder here: its files are not assets.
        let cached = try #require((ok.json["path"] as? String)?.components(separatedBy: "/assets/").last)
        for path in [cached, "thumbs/index.sqlite"] {
            let response = try daemon.request("/v1/thumbnails/large/\(path)")
            #expect(response.status == 403 && response.text.contains("cache"), "\(path): \(response.summary)")
        }
        // Hidden names are not assets on any route, as they are not in the listing: a real image
        // under a hidden name or folder is refused, unread.
        for hidden in [".hidden.png", ".git/small.png", "photos/.small.png"] {
            let target = daemon.assets + "/" + hidden
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: ServePaths.samples + "/pngsuite-basn6a08-alpha.png", toPath: target)
            let response = try daemon.request("/v1/thumbnails/large/\(hidden)")
            #expect(response.status == 403 && response.text.contains("hidden"), "\(hidden): \(response.summary)")
            let focus = try daemon.request("/v1/assets/\(hidden)/focus")
            #expect(focus.status == 403, "focus of \(hidden): \(focus.summary)")
        }
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("413 for a source over limits.maxPixels (also a dimension bomb), 415 for undecodable files")
    func sourceLimitsAndCorruptFiles() throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(extra: ["limits": ["maxPixels": 100_000]]), assets: [
            "landscape.jpg": ServePaths.samples + "/landscape-exif6.jpg",
            "small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
            "bomb.jpg": ServePaths.corpus + "/edge-cases/fuzzdb/lottapixel.jpg",
            "bad-ihdr.png": ServePaths.corpus + "/pngsuite/xc1n0g08.png",
        ])
        try Data("this is not an image at all".utf8).write(to: URL(fileURLWithPath: daemon.assets + "/text.jpg"))
        try daemon.start()

        for (name, status, code) in [("landscape.jpg", 413, "tooLarge"), ("bomb.jpg", 413, "tooLarge"),
                                     ("text.jpg", 415, "undecodable"),
                                     ("bad-ihdr.png", 415, "undecodable")] {
            for attempt in 1...2 { // the second answer comes from the failed-source record
                let response = try daemon.request("/v1/thumbnails/large/\(name)")
                #expect(response.status == status && response.errorCode == code, "\(name) #\(attempt): \(response.summary)")
            }
        }
        let small = try daemon.request("/v1/thumbnails/large/small.png")
        #expect(small.status == 200, "\(small.summary)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_negative_cache_hits_total"] == 4, "\(metrics.text)")
        // By cause: two sources over the limits, two that are no image.
        #expect(metrics.sum("thumbd_render_failures_total") == 4, "\(metrics.text)")
        #expect(metrics["thumbd_render_failures_total{code=\"tooLarge\"}"] == 2, "\(metrics.text)")
        #expect(metrics["thumbd_render_failures_total{code=\"undecodable\"}"] == 2, "\(metrics.text)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("503 with Retry-After when the render queue is full")
    func fullQueueAnswers503() throws {
        let photos = try ServePaths.largePhotos()
        let assets = Dictionary(uniqueKeysWithValues: photos.enumerated().map { ("p\($0.offset).jpg", $0.element) })
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1, server: ["maxQueuedJobs": 1]), assets: assets)
        try daemon.start()
        let paths = assets.keys.sorted().flatMap { name in ["xx-large", "x-large"].map { "/v1/thumbnails/\($0)/\(name)" } }
        let results = try ServeCurl.startBatch(socket: daemon.socket, paths).finish()

        let refused = results.filter { $0.status == 503 }
        #expect(!refused.isEmpty, "no 503 among \(results.map(\.status))")
        #expect(results.contains { $0.status == 200 }, "\(results.map(\.status))")
        for result in results {
            #expect(result.curlExit == 0 && [200, 503].contains(result.status), "\(result)")
            if result.status == 503 { #expect(Int(result.retryAfter) ?? 0 >= 1, "no Retry-After: \(result)") }
        }
        let metrics = try daemon.metrics()
        #expect(metrics.requests("thumbnails", 503) == refused.count)
        #expect(metrics["thumbd_overloaded_total"] == Double(refused.count), "\(metrics.text)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("wait=0 on an uncached thumbnail: 504 now, the render goes on, 200 on a retry")
    func waitZeroAnswers504AndKeepsRendering() throws {
        let photo = try ServePaths.largePhotos()[0]
        let daemon = try ServeDaemon(assets: ["photo.jpg": photo])
        try daemon.start()
        let path = "/v1/thumbnails/xx-large/photo.jpg"
        let first = try daemon.request(path + "?wait=0")
        #expect(first.status == 504 && first.errorCode == "timeout" && first.headers["retry-after"] != nil, "\(first.summary)")
        #expect(first.seconds < 1, "wait=0 answered after \(first.seconds) s")

        var retry = first
        try servePoll(timeout: 20, "the background render") {
            retry = try daemon.request(path + "?wait=0")
            // 202: the render stored the placeholder and the thumbnail is not delivered yet (placeholder first).
            #expect([200, 202, 504].contains(retry.status), "\(retry.summary)")
            return retry.status == 200
        }
        #expect(ServeImageHeader.size(retry.body).map { max($0.width, $0.height) } == 1024, "\(retry.summary)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_render_seconds_count"] == 1, "one render, not one per request:\n\(metrics.text)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
