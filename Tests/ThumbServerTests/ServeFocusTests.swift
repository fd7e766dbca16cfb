import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12, focal points through a real daemon: `/v1/assets/{path}/focus`, a focus kind's key and
/// ETag, `?as=path`'s crop, restarts and removals.
@Suite("thumbd serve: focal points")
struct ServeFocusTests {
    /// landscape.jpg: 1200x1800 stored, orientation 6, so 1800x1200 as displayed.
    static let assets = [
        "landscape.jpg": ServePaths.samples + "/landscape-exif6.jpg",
        "ring.png": ServePaths.samples + "/p3-color-ring-alpha.png",
    ]

    static var kinds: [String: Any] {
        var kinds = ServeDaemon.kinds
        kinds["focus-avatar"] = ["width": 48, "height": 48, "scales": [3], "mode": "fill", "mask": "circle", "crop": "focus"]
        return kinds
    }

    static func daemon() throws -> ServeDaemon {
        try ServeDaemon(config: ServeDaemon.config(kinds: kinds), assets: assets)
    }

    static func focusPath(_ asset: String) -> String { "/v1/assets/\(asset)/focus" }

    static func focus(of response: ServeResponse) -> [Double]? {
        guard let focus = response.json["focus"] as? [String: Double] else { return nil }
        return ["x", "y", "width", "height"].compactMap { focus[$0] }
    }

    static func crop(of response: ServeResponse) -> (x: Double, y: Double, width: Double, height: Double)? {
        guard let crop = response.json["crop"] as? [String: Double], let x = crop["x"], let y = crop["y"],
              let width = crop["width"], let height = crop["height"] else { return nil }
        return (x, y, width, height)
    }

    @Test("PUT, GET and DELETE a focus; bad bodies and paths refused naming the field, nothing changed by them")
    func roundTripAndErrors() throws {
        let daemon = try Self.daemon()
        try daemon.start()
        let path = Self.focusPath("landscape.jpg")
        #expect(try daemon.request(path).errorCode == "noFocus")

        let point = try daemon.request(path, method: "PUT", body: #"{"x": 0.9, "y": 0.5}"#)
        #expect(point.status == 200 && Self.focus(of: point) == [0.9, 0.5, 0, 0], "\(point.summary)")
        #expect(point.json["asset"] as? String == "landscape.jpg")
        let region = try daemon.request(path, method: "PUT", body: #"{"x": 0.1, "y": 0.2, "width": 0.3, "height": 0.8}"#)
        #expect(region.status == 200 && Self.focus(of: region) == [0.1, 0.2, 0.3, 0.8], "\(region.summary)")
        let edge = try daemon.request(Self.focusPath("ring.png"), method: "PUT", body: #"{"x": 0.7, "y": 0, "width": 0.3, "height": 1}"#)
        #expect(edge.status == 200, "0.7 + 0.3 lies on the edge, not past it: \(edge.summary)")

        let refusals: [(body: String, status: Int, says: String)] = [
            (#"{"x": 1.5, "y": 0}"#, 400, "'x' must be a number from 0 to 1"),
            (#"{"x": 0.5, "y": -0.1}"#, 400, "'y' must be a number from 0 to 1"),
            (#"{"x": "0.5", "y": 0}"#, 400, "'x' must be a number"),
            (#"{"x": 0.8, "y": 0, "width": 0.3, "height": 0.1}"#, 400, "'x' + 'width' must be at most 1"),
            (#"{"x": 0, "y": 0.5, "width": 0.1, "height": 0.6}"#, 400, "'y' + 'height' must be at most 1"),
            (#"{"x": 0.1, "y": 0.1, "width": 0.2}"#, 400, "both 'width' and 'height'"),
            (#"{"x": 0.1}"#, 400, "'y' is required"),
            (#"{"x": 0.1, "y": 0.1, "z": 1}"#, 400, "unknown key 'z'"),
            (#"[0.1, 0.1]"#, 400, "got an array"),
            ("x=0.1&y=0.1", 400, "not valid JSON"),
            ("", 400, "not valid JSON"),
            (#"{"x": 0.1, "y": 0.1, "pad": ""# + String(repeating: " ", count: 2000) + #""}"#, 413, "at most 1024 bytes"),
        ]
        for refusal in refusals {
            let response = try daemon.request(path, method: "PUT", body: refusal.body)
            #expect(response.status == refusal.status && (response.json["message"] as? String)?.contains(refusal.says) == true,
                    "\(refusal.body.prefix(80)): \(response.summary)")
        }
        let paths: [(path: String, status: Int, code: String)] = [
            (Self.focusPath("missing.jpg"), 404, "notFound"),
            (Self.focusPath("../outside.jpg"), 400, "badRequest"),
            (Self.focusPath("%2e%2e/thumbd.json"), 400, "badRequest"),
            (Self.focusPath("/etc/passwd"), 403, "forbidden"),
            ("/v1/assets/landscape.jpg", 400, "badRequest"),
        ]
        for refused in paths {
            let response = try daemon.request(refused.path, method: "PUT", body: #"{"x": 0.5, "y": 0.5}"#)
            #expect(response.status == refused.status && response.errorCode == refused.code, "\(refused.path): \(response.summary)")
        }
        #expect(try daemon.request(path, method: "POST", body: "{}").status == 405)
        let kept = try daemon.request(path)
        #expect(kept.status == 200 && Self.focus(of: kept) == [0.1, 0.2, 0.3, 0.8], "the refusals changed nothing: \(kept.summary)")

        #expect(try daemon.request(path, method: "DELETE").status == 204)
        #expect(try daemon.request(path).errorCode == "noFocus")
        let again = try daemon.request(path, method: "DELETE")
        #expect(again.status == 404 && again.errorCode == "noFocus", "\(again.summary)")

        let kinds = try daemon.request("/v1/kinds").json["kinds"] as? [[String: Any]] ?? []
        let crops = Dictionary(uniqueKeysWithValues: kinds.compactMap { kind in (kind["name"] as? String).map { ($0, kind["crop"] as? String) } })
        #expect(crops["focus-avatar"] == "focus" && crops["contact-avatar"] == "centre" && crops["large"] == "centre", "\(crops)")
        #expect(try daemon.metrics().requests("assets", 200) >= 4)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// Sandboxed, the focus and the crop cross the worker protocol; in process, they do not.
    @Test("a focus kind's ETag follows the focus (back when it is removed), a centre kind's does not; ?as=path reports the crop",
          arguments: [true, false])
    func etagAndCrop(sandbox: Bool) throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: Self.kinds, extra: ["sandbox": sandbox]), assets: Self.assets)
        try daemon.start()
        let focusKind = "/v1/thumbnails/focus-avatar/landscape.jpg?as=path"
        let centreKind = "/v1/thumbnails/contact-avatar/landscape.jpg?scale=3&as=path"
        let before = try daemon.request(focusKind)
        let centre = try daemon.request(centreKind)
        #expect(before.status == 200 && centre.status == 200, "\(before.summary) \(centre.summary)")
        // The centre crop of a 1800x1200 image into a square: 1200x1200 from x = 300.
        let centred = try #require(Self.crop(of: centre), "\(centre.summary)")
        #expect(abs(centred.x - 300) <= 1 && abs(centred.y) <= 1 && abs(centred.width - 1200) <= 1 && abs(centred.height - 1200) <= 1,
                "\(centred)")
        let fit = try #require(Self.crop(of: try daemon.request("/v1/thumbnails/large/landscape.jpg?as=path")))
        #expect(fit.x == 0 && fit.y == 0 && fit.width == 1800 && fit.height == 1200, "a fit shows the whole image: \(fit)")

        let set = try daemon.request(Self.focusPath("landscape.jpg"), method: "PUT", body: #"{"x": 0.95, "y": 0.5}"#)
        #expect(set.status == 200, "\(set.summary)")
        let after = try daemon.request(focusKind)
        #expect(after.status == 200, "\(after.summary)")
        #expect(after.json["etag"] as? String != before.json["etag"] as? String, "the focus kind's key holds the focus")
        #expect(after.json["path"] as? String != before.json["path"] as? String)
        #expect(try daemon.request(centreKind).json["etag"] as? String == centre.json["etag"] as? String,
                "a centre kind ignores the focus")
        // The focus (x = 1710 px) as near the centre as the image allows: the crop reaches the right edge.
        let moved = try #require(Self.crop(of: after), "\(after.summary)")
        #expect(abs(moved.x + moved.width - 1800) <= 1 && moved.x > centred.x, "the crop follows the focus: \(moved)")

        let etag = try #require(after.json["etag"] as? String, "the image's ETag, in the JSON answer")
        let conditional = try daemon.request("/v1/thumbnails/focus-avatar/landscape.jpg", headers: ["If-None-Match: \(etag)"])
        #expect(conditional.status == 304, "\(conditional.summary)")

        #expect(try daemon.request(Self.focusPath("landscape.jpg"), method: "DELETE").status == 204)
        let removed = try daemon.request(focusKind)
        #expect(removed.json["etag"] as? String == before.json["etag"] as? String, "no focus again: the key of no focus")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("a focus survives a restart (its thumbnail served from the cache with its crop); it goes with its asset")
    func restartAndRemoval() throws {
        let daemon = try Self.daemon()
        try daemon.start()
        for asset in ["landscape.jpg", "ring.png"] {
            let set = try daemon.request(Self.focusPath(asset), method: "PUT", body: #"{"x": 0.2, "y": 0.3, "width": 0.1, "height": 0.1}"#)
            #expect(set.status == 200, "\(set.summary)")
        }
        let rendered = try daemon.request("/v1/thumbnails/focus-avatar/landscape.jpg?as=path")
        #expect(rendered.status == 200, "\(rendered.summary)")
        #expect(daemon.stop() == 0, "\(daemon.log)")

        try daemon.start()
        let kept = try daemon.request(Self.focusPath("landscape.jpg"))
        #expect(kept.status == 200 && Self.focus(of: kept) == [0.2, 0.3, 0.1, 0.1], "\(kept.summary)")
        let served = try daemon.request("/v1/thumbnails/focus-avatar/landscape.jpg?as=path")
        #expect(served.json["etag"] as? String == rendered.json["etag"] as? String)
        #expect(Self.crop(of: served).map { [$0.x, $0.y, $0.width, $0.height] } == Self.crop(of: rendered).map { [$0.x, $0.y, $0.width, $0.height] },
                "the crop comes back from the index: \(served.summary)")
        #expect(try daemon.metrics()["thumbd_render_seconds_count"] == 0, "served from the cache, not rendered again")

        // Removed while the daemon runs: the watcher's removal drops the focus.
        let events = try daemon.metrics()["thumbd_watcher_events_total"]
        try FileManager.default.removeItem(atPath: daemon.assets + "/ring.png")
        try daemon.waitForMetrics("the removal event") { $0["thumbd_watcher_events_total"] > events }
        #expect(try daemon.request(Self.focusPath("ring.png")).errorCode == "notFound")
        try FileManager.default.copyItem(atPath: Self.assets["ring.png"]!, toPath: daemon.assets + "/ring.png")
        try servePoll(timeout: 15, "ring.png's focus to be gone") { try daemon.request(Self.focusPath("ring.png")).errorCode == "noFocus" }

        // Removed while it is down: the start-up reconcile drops the focus.
        #expect(daemon.stop() == 0, "\(daemon.log)")
        try FileManager.default.removeItem(atPath: daemon.assets + "/landscape.jpg")
        try daemon.start()
        try servePoll(timeout: 15, "readiness") { try daemon.request("/readyz").status == 200 }
        try FileManager.default.copyItem(atPath: Self.assets["landscape.jpg"]!, toPath: daemon.assets + "/landscape.jpg")
        let gone = try daemon.request(Self.focusPath("landscape.jpg"))
        #expect(gone.status == 404 && gone.errorCode == "noFocus", "\(gone.summary)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// Without the focus in the pre-render's key and request, the edit's pre-render would be
    /// stored as "no focus", and the `wait=0` request below would miss (504).
    @Test("an edited asset keeps its focus, and the watcher's pre-render is cropped around it")
    func prerenderUsesFocus() throws {
        var kinds = Self.kinds
        kinds["focus-avatar"] = ["width": 48, "height": 48, "scales": [3], "mode": "fill", "mask": "circle", "crop": "focus",
                                 "pregenerate": true]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: kinds), assets: ["landscape.jpg": Self.assets["landscape.jpg"]!])
        try daemon.start()
        try daemon.waitForMetrics("the start-up pre-render") { $0["thumbd_render_seconds_count"] == 1 }
        let unfocused = try daemon.request("/v1/thumbnails/focus-avatar/landscape.jpg?as=path&wait=0")
        #expect(unfocused.status == 200, "\(unfocused.summary)")
        let set = try daemon.request(Self.focusPath("landscape.jpg"), method: "PUT", body: #"{"x": 0.95, "y": 0.5}"#)
        #expect(set.status == 200, "\(set.summary)")

        // Re-saved: a new version, pre-rendered by the watcher's backlog.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.assets["landscape.jpg"]!))
        try (bytes + Data([0xFF, 0xD9])).write(to: URL(fileURLWithPath: daemon.assets + "/landscape.jpg"))
        try daemon.waitForMetrics("the edit's pre-render") { $0["thumbd_render_seconds_count"] == 2 }
        let kept = try daemon.request(Self.focusPath("landscape.jpg"))
        #expect(kept.status == 200 && Self.focus(of: kept) == [0.95, 0.5, 0, 0], "the edit kept the focus: \(kept.summary)")
        let focused = try daemon.request("/v1/thumbnails/focus-avatar/landscape.jpg?as=path&wait=0")
        #expect(focused.status == 200, "the pre-render was keyed with the focus: \(focused.summary)")
        #expect(focused.json["etag"] as? String != unfocused.json["etag"] as? String)
        #expect(try daemon.metrics()["thumbd_render_seconds_count"] == 2, "served what the watcher rendered")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
