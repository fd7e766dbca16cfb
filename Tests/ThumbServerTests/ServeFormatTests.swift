import Foundation
import Testing

/// The output format of `GET /v1/thumbnails`: `format=`, `Accept`, the kind's allow-list, and
/// what changes with it (the media type, the ETag, `Vary`).
@Suite("thumbd serve: output formats")
struct ServeFormatTests {
    static let assets = ["landscape.jpg": ServePaths.samples + "/landscape-exif6.jpg",
                         "ring.png": ServePaths.samples + "/p3-color-ring-alpha.png"]

    @Test("no format= and no telling Accept: today's JPEG/PNG; Accept image/webp: WebP with its own ETag; format= wins")
    func negotiation() throws {
        let daemon = try ServeDaemon(assets: Self.assets)
        try daemon.start()
        let plain = try daemon.request("/v1/thumbnails/large/landscape.jpg", headers: ["Accept: */*"])
        #expect(plain.status == 200 && plain.headers["content-type"] == "image/jpeg", "\(plain.summary)")
        #expect(plain.headers["vary"] == "Accept, Origin", "another Accept would get WebP: caches must key on it")

        let webp = try daemon.request("/v1/thumbnails/large/landscape.jpg", headers: ["Accept: image/avif,image/webp,*/*;q=0.8"])
        #expect(webp.status == 200 && webp.headers["content-type"] == "image/webp", "\(webp.summary)")
        let size = try #require(ServeImageHeader.size(webp.body), "not a WebP: \(webp.summary)")
        #expect(size.format == "webp" && size.width == 256 && (170...171).contains(size.height), "\(size)")
        #expect(webp.headers["etag"] != nil && webp.headers["etag"] != plain.headers["etag"])
        #expect(webp.headers["vary"] == "Accept, Origin")
        #expect(webp.body.count < plain.body.count, "WebP \(webp.body.count) bytes, JPEG \(plain.body.count)")

        // The WebP's ETag validates only the WebP.
        let revalidated = try daemon.request("/v1/thumbnails/large/landscape.jpg",
                                             headers: ["Accept: image/webp", "If-None-Match: \(webp.headers["etag"] ?? "")"])
        #expect(revalidated.status == 304, "\(revalidated.summary)")
        let other = try daemon.request("/v1/thumbnails/large/landscape.jpg", headers: ["If-None-Match: \(webp.headers["etag"] ?? "")"])
        #expect(other.status == 200 && other.headers["content-type"] == "image/jpeg", "\(other.summary)")

        let asked = try daemon.request("/v1/thumbnails/contact-avatar/ring.png?scale=2&format=png", headers: ["Accept: image/webp"])
        #expect(asked.status == 200 && asked.headers["content-type"] == "image/png" && asked.headers["vary"] == "Accept, Origin",
                "Accept: application/json would answer JSON on this URL: \(asked.summary)")
        let described = try daemon.request("/v1/thumbnails/contact-avatar/ring.png?scale=2&format=webp&as=path")
        #expect(described.json["format"] as? String == "webp" && described.json["contentType"] as? String == "image/webp",
                "\(described.summary)")
        #expect((described.json["path"] as? String)?.hasSuffix(".webp") == true, "\(described.summary)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("format= outside the kind's formats, or unknown: 400 naming what is allowed")
    func refusals() throws {
        var kinds = ServeDaemon.kinds
        kinds["webp-only"] = ["width": 64, "height": 64, "encoding": ["format": "webp", "formats": ["webp"]]]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: kinds), assets: Self.assets)
        try daemon.start()
        let avif = try daemon.request("/v1/thumbnails/large/landscape.jpg?format=avif")
        #expect(avif.status == 400 && avif.json["error"] as? String == "formatNotAllowed", "\(avif.summary)")
        #expect((avif.json["message"] as? String)?.contains("jpeg, png, webp") == true, "\(avif.summary)")
        let tiff = try daemon.request("/v1/thumbnails/large/landscape.jpg?format=tiff")
        #expect(tiff.status == 400, "\(tiff.summary)")
        let only = try daemon.request("/v1/thumbnails/webp-only/landscape.jpg")
        #expect(only.status == 200 && only.headers["content-type"] == "image/webp" && only.headers["vary"] == "Accept, Origin", "\(only.summary)")
        let jpeg = try daemon.request("/v1/thumbnails/webp-only/landscape.jpg?format=jpeg")
        #expect(jpeg.status == 400, "\(jpeg.summary)")
        let listing = try #require(try daemon.request("/v1/kinds").json["kinds"] as? [[String: Any]])
        let listed = try #require(listing.first { $0["name"] as? String == "webp-only" })
        #expect(listed["format"] as? String == "webp" && listed["formats"] as? [String] == ["webp"], "\(listed)")
        let large = try #require(listing.first { $0["name"] as? String == "large" })
        #expect(large["format"] as? String == "auto" && large["formats"] as? [String] == ["jpeg", "png", "webp"], "\(large)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("a pre-rendered kind that allows AVIF is pre-rendered as AVIF too and served to Accept image/avif")
    func avifForPregeneratedKinds() throws {
        var kinds = ServeDaemon.kinds
        kinds["card"] = ["width": 200, "height": 180, "mode": "fit", "pregenerate": true,
                         "encoding": ["formats": ["jpeg", "png", "webp", "avif"]]]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: kinds), assets: Self.assets)
        try daemon.start()
        try servePoll(timeout: 60, "AVIF and JPEG pre-renders of both assets") {
            try daemon.metrics()["thumbd_render_seconds_count"] >= 4
        }
        let avif = try daemon.request("/v1/thumbnails/card/landscape.jpg?wait=0", headers: ["Accept: image/avif,image/webp"])
        #expect(avif.status == 200 && avif.headers["content-type"] == "image/avif", "\(avif.summary): pre-rendered, so no wait")
        #expect(ServeImageHeader.size(avif.body)?.format == "avif")

        // Issue 23, finding 10: at a scale the kind does not declare (so never pre-rendered) no
        // AVIF is encoded on the request's path: Accept falls back to WebP, format=avif is refused.
        let rendersBefore = try daemon.metrics()["thumbd_render_seconds_count"]
        let undeclared = try daemon.request("/v1/thumbnails/card/landscape.jpg?scale=3", headers: ["Accept: image/avif,image/webp"])
        #expect(undeclared.status == 200 && undeclared.headers["content-type"] == "image/webp", "\(undeclared.summary)")
        let asked = try daemon.request("/v1/thumbnails/card/landscape.jpg?scale=3&format=avif")
        #expect(asked.status == 400 && asked.json["error"] as? String == "formatNotAllowed", "\(asked.summary)")
        #expect((asked.json["message"] as? String)?.contains("pre-rendered scales (1x)") == true, "\(asked.summary)")
        let prefetch = try daemon.request("/v1/prefetch", method: "POST", headers: ["Accept: image/avif", "Content-Type: application/json"],
                                          body: #"{"assets": ["ring.png"], "kinds": ["card"], "scale": 2}"#)
        #expect(prefetch.status == 202, "\(prefetch.summary)")
        try servePoll(timeout: 30, "the prefetch's render") { try daemon.metrics()["thumbd_render_seconds_count"] >= rendersBefore + 2 }
        let prefetched = try daemon.request("/v1/thumbnails/card/ring.png?scale=2&as=path", headers: ["Accept: image/avif"])
        #expect(prefetched.json["format"] as? String != "avif", "\(prefetched.summary)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
