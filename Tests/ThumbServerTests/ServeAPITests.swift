import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every route and status of `thumbd serve`, over its Unix socket, each test with its own daemon.
@Suite("thumbd serve: HTTP API")
struct ServeAPITests {
    static let sampleAssets = [
        "landscape.jpg": ServePaths.samples + "/landscape-exif6.jpg", // 1200x1800 stored, orientation 6: 1800x1200 shown
        "ring.png": ServePaths.samples + "/p3-color-ring-alpha.png",  // 1000x1000 RGBA, all opaque: JPEG out
        "photos/small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
    ]

    @Test("200 images with caching headers, 304 on If-None-Match, the JSON path form")
    func imagesAndCaching() throws {
        let daemon = try ServeDaemon(assets: Self.sampleAssets)
        try daemon.start()

        let jpeg = try daemon.request("/v1/thumbnails/large/landscape.jpg")
        #expect(jpeg.status == 200, "\(jpeg.summary)")
        #expect(jpeg.headers["content-type"] == "image/jpeg")
        #expect(jpeg.headers["cache-control"] == "public, max-age=31536000, immutable")
        let size = try #require(ServeImageHeader.size(jpeg.body), "not a JPEG: \(jpeg.summary)")
        #expect(size.format == "jpeg" && size.width == 256 && (170...171).contains(size.height), "\(size)")
        let etag = try #require(jpeg.headers["etag"])

        let again = try daemon.request("/v1/thumbnails/large/landscape.jpg", headers: ["If-None-Match: \(etag)"])
        #expect(again.status == 304 && again.body.isEmpty, "\(again.summary)")
        #expect(again.headers["etag"] == etag)
        let otherTag = try daemon.request("/v1/thumbnails/large/landscape.jpg", headers: [#"If-None-Match: "nope""#])
        #expect(otherTag.status == 200 && otherTag.body == jpeg.body, "\(otherTag.summary)")

        let avatar = try daemon.request("/v1/thumbnails/contact-avatar/ring.png?scale=3")
        #expect(avatar.status == 200 && avatar.headers["content-type"] == "image/png", "\(avatar.summary)")
        #expect(ServeImageHeader.size(avatar.body).map { [$0.width, $0.height] } == [144, 144])
        let inline = try daemon.request("/v1/thumbnails/111x111,fill/photos/small.png?scale=1")
        #expect(inline.status == 200 && inline.headers["content-type"] == "image/png", "\(inline.summary)")
        #expect(ServeImageHeader.size(inline.body).map { [$0.width, $0.height] } == [32, 32], "no upscale by default")

        for (query, headers) in [("?as=path", [String]()), ("", ["Accept: application/json"])] {
            let described = try daemon.request("/v1/thumbnails/large/ring.png\(query)", headers: headers)
            #expect(described.status == 200 && described.headers["content-type"] == "application/json", "\(described.summary)")
            let json = described.json
            let path = try #require(json["path"] as? String, "\(described.summary)")
            let file = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(path.hasPrefix(daemon.cache + "/") || path.contains("/cache/"), "\(path)")
            #expect(file.count == json["bytes"] as? Int)
            #expect(json["width"] as? Int == 256 && json["height"] as? Int == 256 && json["format"] as? String == "jpeg")
            // The image's ETag is in the body; the JSON answer has its own (issue 23, finding 5).
            #expect(json["contentType"] as? String == "image/jpeg" && json["etag"] as? String != nil)
            let imageTag = try #require(json["etag"] as? String)
            let jsonTag = try #require(described.headers["etag"], "\(described.summary)")
            #expect(jsonTag != imageTag)
            #expect(described.headers["vary"] == "Accept, Origin" && described.headers["cache-control"] == "no-cache", "\(described.summary)")
            let imageValidator = try daemon.request("/v1/thumbnails/large/ring.png\(query)", headers: headers + ["If-None-Match: \(imageTag)"])
            #expect(imageValidator.status == 200 && imageValidator.headers["content-type"] == "application/json",
                    "the image's ETag does not validate the JSON: \(imageValidator.summary)")
            let jsonValidator = try daemon.request("/v1/thumbnails/large/ring.png\(query)", headers: headers + ["If-None-Match: \(jsonTag)"])
            #expect(jsonValidator.status == 304 && jsonValidator.headers["etag"] == jsonTag, "\(jsonValidator.summary)")
            let header = try #require(ServeImageHeader.size(Array(file)))
            #expect(header.width == 256 && header.height == 256)
        }
        #expect(daemon.stop() == 0, "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket file is removed at exit")
    }

    @Test("400, 404, 405, kinds, healthz, prefetch, slots; /metrics counts every request")
    func routesAndMetrics() throws {
        let daemon = try ServeDaemon(assets: Self.sampleAssets)
        try daemon.start()
        var expected: [String: Int] = [:] // "route status" → count
        func check(_ path: String, method: String = "GET", body: String? = nil, _ status: Int, _ route: String,
                   error: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> ServeResponse {
            let response = try daemon.request(path, method: method, body: body)
            #expect(response.status == status, "\(method) \(path): \(response.summary)", sourceLocation: sourceLocation)
            if let error {
                #expect(response.errorCode == error, "\(method) \(path): \(response.summary)", sourceLocation: sourceLocation)
                #expect(response.json["message"] is String, sourceLocation: sourceLocation)
            }
            expected["\(route) \(status)", default: 0] += 1
            return response
        }
        _ = try check("/v1/thumbnails/no-such-kind/ring.png", 400, "thumbnails", error: "badKind")
        _ = try check("/v1/thumbnails/0x0,fill/ring.png", 400, "thumbnails", error: "badKind")
        _ = try check("/v1/thumbnails/large/ring.png?scale=7", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large/ring.png?scale=two", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large/ring.png?token=3", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large/ring.png?client=c", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large/ring.png?priority=urgent", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large/ring.png?wait=-1", 400, "thumbnails", error: "badQuery")
        _ = try check("/v1/thumbnails/large", 400, "thumbnails", error: "badRequest")
        _ = try check("/v1/thumbnails/large/missing.png", 404, "thumbnails", error: "notFound")
        _ = try check("/v1/thumbnails/large/photos/missing/deeper.png", 404, "thumbnails", error: "notFound")
        _ = try check("/v1/nothing-here", 404, "other", error: "notFound")
        _ = try check("/", 404, "other", error: "notFound")
        _ = try check("/v1/kinds", method: "POST", body: "{}", 405, "kinds", error: "methodNotAllowed")
        _ = try check("/v1/thumbnails/large/ring.png", method: "PUT", body: "{}", 405, "thumbnails", error: "methodNotAllowed")
        _ = try check("/healthz", method: "DELETE", 405, "healthz", error: "methodNotAllowed")
        // A 405 names what the resource takes (RFC 9110: Allow), and a method the route's other
        // shape takes is 405 too, not that shape's 400 (schemathesis found both).
        func allow(_ path: String, method: String, _ route: String, _ methods: String,
                   sourceLocation: SourceLocation = #_sourceLocation) throws {
            let refused = try check(path, method: method, body: "{}", 405, route, error: "methodNotAllowed",
                                    sourceLocation: sourceLocation)
            #expect(refused.headers["allow"] == methods, "\(method) \(path): \(refused.summary)", sourceLocation: sourceLocation)
        }
        try allow("/v1/kinds", method: "PATCH", "kinds", "GET, HEAD")
        try allow("/v1/prefetch", method: "DELETE", "prefetch", "POST")
        try allow("/v1/prefetch/some-id", method: "POST", "prefetch", "DELETE")
        try allow("/v1/slots/someone/cell-1", method: "GET", "slots", "DELETE")
        try allow("/v1/placeholders", method: "PUT", "placeholders", "GET, HEAD, POST")
        try allow("/v1/assets/ring.png/focus", method: "POST", "assets", "GET, HEAD, PUT, DELETE")
        try allow("/v1/openapi.yaml", method: "DELETE", "openapi", "GET, HEAD")
        // The contract, as built into the binary: the repository's docs/openapi.yaml.
        let contract = try check("/v1/openapi.yaml", 200, "openapi")
        #expect(contract.headers["content-type"] == "application/yaml")
        let document = try String(contentsOfFile: ServePaths.packageRoot + "/docs/openapi.yaml", encoding: .utf8)
        #expect(contract.text == document, "GET /v1/openapi.yaml differs from docs/openapi.yaml (built in by SwiftPM from Sources/ThumbServer/openapi.yaml, a link to it)")

        let kinds = try check("/v1/kinds", 200, "kinds")
        let list = try #require(kinds.json["kinds"] as? [[String: Any]], "\(kinds.summary)")
        #expect(list.compactMap { $0["name"] as? String } == ["contact-avatar", "large", "normal", "x-large", "xx-large"])
        let avatar = try #require(list.first)
        #expect(avatar["mask"] as? String == "circle" && avatar["mode"] as? String == "fill")
        #expect((avatar["pixels"] as? [[String: Int]])?.map { $0["width"] } == [96, 144])
        let health = try check("/healthz", 200, "healthz")
        #expect(health.json["status"] as? String == "ok")

        // Prefetch: queued, rendered in the background, then served from the cache at once.
        _ = try check("/v1/prefetch", method: "POST", body: #"{"assets": "ring.png"}"#, 400, "prefetch", error: "badRequest")
        _ = try check("/v1/prefetch", method: "POST", body: #"{"assets": ["ring.png"], "kinds": ["nope"]}"#, 400, "prefetch",
                      error: "badKind")
        let prefetch = try check("/v1/prefetch", method: "POST", body: #"{"assets": ["ring.png"], "kinds": ["normal"], "scale": 2}"#,
                                 202, "prefetch")
        let id = try #require(prefetch.json["id"] as? String, "\(prefetch.summary)")
        #expect(prefetch.json["queued"] as? Int == 1)
        try daemon.waitForMetrics("the prefetch render") { $0["thumbd_render_seconds_count"] == 1 }
        let prefetched = try check("/v1/thumbnails/normal/ring.png?scale=2&wait=0", 200, "thumbnails")
        #expect(ServeImageHeader.size(prefetched.body).map { [$0.width, $0.height] } == [256, 256])
        let withdrawn = try check("/v1/prefetch/\(id)", method: "DELETE", 200, "prefetch")
        #expect(withdrawn.json["id"] as? String == id && withdrawn.json["cancelled"] as? Int == 0, "\(withdrawn.summary)")
        _ = try check("/v1/slots/someone/cell-1", method: "DELETE", 204, "slots")

        let metrics = try daemon.metrics()
        for family in ["thumbd_http_requests_total", "thumbd_cache_hits_total", "thumbd_cache_misses_total",
                       "thumbd_render_seconds", "thumbd_queue_depth", "thumbd_superseded_total", "thumbd_cancelled_total",
                       "thumbd_wasted_render_cpu_seconds_total", "thumbd_watcher_events_total", "thumbd_cache_bytes",
                       "thumbd_cache_entries", "thumbd_watched_folders", "thumbd_unwatched_folders", "thumbd_watch_failures_total",
                       "thumbd_missed_folder_rescans_total"] {
            #expect(metrics.families.contains(family), "no \(family) in /metrics:\n\(metrics.text)")
        }
        for (key, count) in expected {
            let parts = key.split(separator: " ")
            #expect(metrics.requests(String(parts[0]), Int(parts[1])!) == count, "\(key) in:\n\(metrics.text)")
        }
        // The waitForMetrics polls were answered 200 as well; this scrape is counted after it is rendered.
        #expect(metrics.requests("metrics", 200) >= 1)
        #expect(metrics.sum("thumbd_http_requests_total") == Double(expected.values.reduce(0, +) + metrics.requests("metrics", 200)))
        #expect(metrics["thumbd_cache_hits_total{level=\"memory\"}"] + metrics["thumbd_cache_hits_total{level=\"disk\"}"] == 1)
        #expect(metrics["thumbd_queue_depth{priority=\"visible\"}"] == 0)
        #expect(metrics["thumbd_watched_folders"] >= 1 && metrics["thumbd_unwatched_folders"] == 0, "\(metrics.text)")
        #expect(metrics["thumbd_cache_entries{level=\"disk\"}"] == 1 && metrics["thumbd_cache_bytes{level=\"disk\"}"] > 0)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
