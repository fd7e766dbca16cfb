import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Placeholders over HTTP, through a real daemon (sandboxed workers, the default): the batch
/// endpoint in both forms, `placeholder` in the JSON answers, `X-Thumbd-Placeholder` on 504,
/// and placeholder first (`wait=0`: 202 with it while the render goes on).
@Suite("thumbd serve: placeholders")
struct ServePlaceholderTests {
    static let assets = [
        "landscape.jpg": ServePaths.samples + "/landscape-exif6.jpg", // 1200x1800 stored, orientation 6: shown landscape
        "ring.png": ServePaths.samples + "/p3-color-ring-alpha.png",
        "photos/small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png", // translucent
        "dir,with/comma.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
    ]

    static func entries(_ response: ServeResponse) -> [String: [String: Any]] {
        (response.json["placeholders"] as? [String: Any])?.compactMapValues { $0 as? [String: Any] } ?? [:]
    }

    /// Polls `POST /v1/placeholders` until every listed asset is ready; returns the last answer's entries.
    static func ready(_ daemon: ServeDaemon, _ assets: [String]) throws -> [String: [String: Any]] {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["assets": assets]), as: UTF8.self)
        var last: [String: [String: Any]] = [:]
        try servePoll(timeout: 30, "placeholders of \(assets)") {
            let response = try daemon.request("/v1/placeholders", method: "POST", body: body)
            guard response.status == 200 else { throw TestFailure("POST /v1/placeholders: \(response.summary)") }
            last = entries(response)
            return assets.allSatisfy { last[$0]?["status"] as? String == "ready" }
        }
        return last
    }

    static func hash(_ entry: [String: Any]?) -> [UInt8]? {
        (entry?["thumbhash"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init)
    }

    @Test("POST and GET /v1/placeholders: pending then ready for real assets, missing per asset, one JSON object")
    func batchEndpoint() throws {
        let daemon = try ServeDaemon(assets: Self.assets)
        try daemon.start()
        let first = try daemon.request("/v1/placeholders", method: "POST",
                                       body: #"{"assets": ["landscape.jpg", "photos/small.png", "nope.jpg", "../etc/passwd", "we\"ird\\\tname\u0001.jpg"]}"#)
        #expect(first.status == 200 && first.headers["content-type"] == "application/json", "\(first.summary)")
        let entries = Self.entries(first)
        #expect(entries.count == 5, "the answer is JSON whatever the names hold: \(first.summary)")
        #expect(entries["we\"ird\\\tname\u{1}.jpg"]?["status"] as? String == "missing", "\(first.summary)")
        #expect(entries["landscape.jpg"]?["status"] as? String == "pending", "never decoded: queued at prefetch priority")
        #expect(entries["nope.jpg"]?["status"] as? String == "missing" && entries["nope.jpg"]?["message"] is String)
        #expect(entries["../etc/passwd"]?["status"] as? String == "missing", "\(first.summary)")

        let ready = try Self.ready(daemon, ["landscape.jpg", "photos/small.png", "ring.png", "dir,with/comma.png"])
        for (asset, entry) in ready {
            let hash = try #require(Self.hash(entry), "\(asset): \(entry)")
            #expect((5...25).contains(hash.count), "\(asset)")
            let color = try #require(entry["averageColor"] as? String)
            #expect(color.count == 9 && color.hasPrefix("#") && color.dropFirst().allSatisfy(\.isHexDigit), "\(color)")
            #expect((entry["version"] as? String)?.count == 16, "\(asset): \(entry)")
        }
        let landscape = try #require(Self.hash(ready["landscape.jpg"]))
        #expect(landscape[4] & 0x80 != 0, "orientation 6 of a portrait-stored file: shown, and hashed, landscape")
        let small = try #require(Self.hash(ready["photos/small.png"]))
        #expect(small[2] & 0x80 != 0, "the translucent PNG's hash has alpha")
        #expect((ready["photos/small.png"]?["averageColor"] as? String)?.hasSuffix("ff") == false)

        // The GET form: comma-separated, a comma inside a path percent-encoded.
        let get = try daemon.request("/v1/placeholders?assets=landscape.jpg,photos%2Fsmall.png,dir%2Cwith/comma.png,nope.jpg")
        #expect(get.status == 200, "\(get.summary)")
        let got = Self.entries(get)
        #expect(Self.hash(got["landscape.jpg"]) == landscape && Self.hash(got["photos/small.png"]) == small, "\(get.summary)")
        #expect(Self.hash(got["dir,with/comma.png"]) == small && got["nope.jpg"]?["status"] as? String == "missing")

        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_placeholders_computed_total"] == 4, "one decode per asset: \(metrics.sum("thumbd_placeholders_computed_total"))")
        #expect(metrics["thumbd_placeholder_lookups_total{result=\"ready\"}"] >= 4)
        #expect(metrics["thumbd_placeholder_lookups_total{result=\"pending\"}"] >= 2)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("bounded at the door: 400 naming the field, for each malformed body or query")
    func refusals() throws {
        let daemon = try ServeDaemon(assets: Self.assets)
        try daemon.start()
        let tooMany = String(decoding: try JSONSerialization.data(withJSONObject: ["assets": (0...200).map { "a\($0).jpg" }]), as: UTF8.self)
        let long = String(repeating: "x", count: 5000)
        for (body, field) in [("[]", "assets"), (#"{"assets": []}"#, "assets"), (#"{"assets": ["a.jpg", 7]}"#, "assets[1]"),
                              (#"{"assets": ["a.jpg"], "kinds": []}"#, "kinds"), (tooMany, "assets"), ("{", "JSON"),
                              (#"{"assets": [""]}"#, "assets[0]"), (#"{"assets": ["\#(long)"]}"#, "assets[0]"),
                              (#"{"assets": ["a\u0000b"]}"#, "assets[0]")] {
            let response = try daemon.request("/v1/placeholders", method: "POST", body: body)
            #expect(response.status == 400 && response.errorCode == "badRequest", "\(body.prefix(60)): \(response.summary)")
            #expect((response.json["message"] as? String)?.contains(field) == true, "\(body.prefix(60)): \(response.summary)")
        }
        for (query, field) in [("", "assets"), ("?assets=", "assets"), ("?asset=a.jpg", "asset"), ("?assets=a.jpg,,b.jpg", "assets[1]"),
                               ("?assets=a%00b", "assets[0]")] {
            let response = try daemon.request("/v1/placeholders\(query)")
            #expect(response.status == 400, "\(query): \(response.summary)")
            #expect((response.json["message"] as? String)?.contains(field) == true, "\(query): \(response.summary)")
        }
        let wrongMethod = try daemon.request("/v1/placeholders", method: "DELETE")
        #expect(wrongMethod.status == 405, "\(wrongMethod.summary)")
        #expect(daemon.isRunning)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("the JSON answer of /v1/thumbnails carries the placeholder; wait=0 on a miss answers 202 with it; 504 carries the header")
    func placeholderFirst() throws {
        let photo = try ServePaths.largePhotos()[0]
        let daemon = try ServeDaemon(assets: Self.assets.merging(["photo.jpg": photo]) { old, _ in old })
        try daemon.start()
        // Before anything is decoded: a miss with wait=0 has no placeholder to offer, so 504 as before.
        let cold = try daemon.request("/v1/thumbnails/large/landscape.jpg?wait=0")
        #expect(cold.status == 504 && cold.headers["x-thumbd-placeholder"] == nil, "\(cold.summary)")
        let known = try Self.ready(daemon, ["landscape.jpg", "photo.jpg"])
        let landscape = try #require(known["landscape.jpg"]?["thumbhash"] as? String)

        let described = try daemon.request("/v1/thumbnails/large/landscape.jpg?as=path")
        #expect(described.status == 200, "\(described.summary)")
        let member = try #require(described.json["placeholder"] as? [String: Any], "\(described.summary)")
        #expect(member["thumbhash"] as? String == landscape)
        #expect(member["averageColor"] as? String == known["landscape.jpg"]?["averageColor"] as? String)

        // Placeholder first: another kind, never rendered, wait=0.
        let first = try daemon.request("/v1/thumbnails/x-large/landscape.jpg?wait=0")
        #expect(first.status == 202, "\(first.summary)")
        #expect(first.headers["x-thumbd-placeholder"] == landscape)
        #expect((first.json["placeholder"] as? [String: Any])?["thumbhash"] as? String == landscape, "\(first.summary)")
        #expect(first.json["status"] as? String == "pending")
        // The render went on: the thumbnail arrives without a second decode being asked for.
        try servePoll(timeout: 30, "the x-large render") {
            try daemon.request("/v1/thumbnails/x-large/landscape.jpg?wait=0").status == 200
        }

        // A wait that runs out on a 12 MP photo's xx-large render: 504, with the placeholder.
        let photoHash = try #require(known["photo.jpg"]?["thumbhash"] as? String)
        let timedOut = try daemon.request("/v1/thumbnails/xx-large/photo.jpg?wait=1")
        #expect(timedOut.status == 504 && timedOut.errorCode == "timeout", "\(timedOut.summary)")
        #expect(timedOut.headers["x-thumbd-placeholder"] == photoHash, "\(timedOut.summary)")
        #expect((timedOut.json["placeholder"] as? [String: Any])?["thumbhash"] as? String == photoHash)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("an edited file is pending until decoded again, then ready with a new version; a removed one is missing")
    func editedAndRemoved() throws {
        let daemon = try ServeDaemon(assets: Self.assets)
        try daemon.start()
        let before = try Self.ready(daemon, ["ring.png"])["ring.png"]
        let target = daemon.assets + "/ring.png"
        try FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: ServePaths.samples + "/pngsuite-basn6a08-alpha.png", toPath: target)
        let after = try Self.ready(daemon, ["ring.png"])["ring.png"]
        #expect(after?["version"] as? String != before?["version"] as? String)
        #expect(Self.hash(after) != Self.hash(before))
        try FileManager.default.removeItem(atPath: target)
        let gone = Self.entries(try daemon.request("/v1/placeholders?assets=ring.png"))
        #expect(gone["ring.png"]?["status"] as? String == "missing")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
