import Foundation
import Testing
import ThumbTestSupport

/// Videos through the daemon (issue 38): scanned and listed as `video`, posters served and
/// cached like stills, refusals 415 with a message, remembered and never written, a `keep`
/// kind's WebP preview, and the decodes counted by format. The daemon runs its workers
/// sandboxed (the default); a daemon without the sandbox answers a video 415 without decoding it.
@Suite("thumbd serve: videos")
struct ServeVideoTests {
    static func video(_ name: String) -> String { TestPaths.corpusFile("media/video/" + name) }

    @Test func videosAreAssetsLikeStills() throws {
        var kinds = ServeDaemon.kinds
        kinds["preview"] = ["width": 160, "height": 160, "mode": "fit", "animation": "keep"]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: kinds), assets: [
            "clips/portrait.mp4": Self.video("gen__phone_portrait_1080p_rot90.mp4"),
            "clips/moving.mp4": Self.video("gen__animated_preview_320x240.mp4"),
            "clips/road.WEBM": Self.video("androidx__roadtrip-vp92-10bit.webm"),
            "clips/camera": Self.video("gen__mjpeg_camera_640x480.avi"),
            "clips/voice.mp4": Self.video("androidx__sample_audio_only.mp4"),
            "clips/cut.mp4": Self.video("gen__truncated_no_moov.mp4"),
            "photo.jpg": ServePaths.samples + "/flower-cmyk.jpg",
        ])
        try daemon.start()

        // Scanned (an extension in any case; a name without one by its first bytes) and listed as video.
        // The start-up reconcile fills the listing in the background: wait for it.
        var listed: [[String: Any]] = []
        try servePoll(timeout: 30, "the six clips and the photo in /v1/assets") {
            listed = try daemon.request("/v1/assets").json["assets"] as? [[String: Any]] ?? []
            return listed.count == 7
        }
        let photo = listed.first { $0["path"] as? String == "photo.jpg" }
        listed = listed.filter { ($0["path"] as? String)?.hasPrefix("clips/") == true }
        let media = Dictionary(uniqueKeysWithValues: listed.compactMap { entry in
            (entry["path"] as? String).map { ($0, entry["media"] as? String ?? "none") }
        })
        #expect(media == ["clips/camera": "none", "clips/cut.mp4": "video", "clips/moving.mp4": "video", "clips/portrait.mp4": "video",
                          "clips/road.WEBM": "video", "clips/voice.mp4": "video"], "\(listed)")
        #expect(photo?["media"] as? String == "still")

        // A portrait phone clip is a portrait poster; an extension-less AVI renders too.
        let poster = try daemon.request("/v1/thumbnails/large/clips/portrait.mp4")
        #expect(poster.status == 200 && poster.headers["content-type"] == "image/jpeg", "\(poster.summary)")
        let size = try Self.size(of: poster.body)
        #expect(size == (144, 256), "\(size)")
        #expect(try daemon.request("/v1/thumbnails/contact-avatar@2x/clips/road.WEBM").status == 200)
        #expect(try daemon.request("/v1/thumbnails/normal/clips/camera").status == 200)
        // Served again from the cache.
        let again = try daemon.request("/v1/thumbnails/large/clips/portrait.mp4")
        #expect(again.status == 200 && again.body == poster.body)

        // A keep kind in WebP: the preview, animated.
        let preview = try daemon.request("/v1/thumbnails/preview/clips/moving.mp4?format=webp")
        #expect(preview.status == 200 && preview.headers["content-type"] == "image/webp", "\(preview.summary)")
        let scratch = try ScratchDirectory("video-preview")
        defer { scratch.remove() }
        let frames = try ServeAnimationTests.frames(of: preview.body, in: scratch)
        #expect(frames.count == 24 && frames.durationMs == 24 * 167, "\(frames)")

        // Refusals: 415 with the reason, remembered (the second ask renders nothing), nothing written.
        let cachedBefore = try Self.files(in: daemon.cache)
        for (name, reason) in [("clips/voice.mp4", "no video stream"), ("clips/cut.mp4", "moov atom not found")] {
            let refused = try daemon.request("/v1/thumbnails/large/\(name)")
            #expect(refused.status == 415, "\(name): \(refused.summary)")
            #expect((refused.json["message"] as? String)?.contains(reason) == true, "\(name): \(refused.summary)")
        }
        let decodes = try daemon.metrics()
        #expect(try daemon.request("/v1/thumbnails/large/clips/voice.mp4").status == 415)
        let after = try daemon.metrics()
        #expect(after["thumbd_render_seconds_count"] == decodes["thumbd_render_seconds_count"], "a remembered failure is not rendered again")
        #expect(try Self.files(in: daemon.cache) == cachedBefore, "a refused video writes nothing to the cache")
        // Decodes by the format the bytes are (the extension-less AVI among them).
        #expect(after[#"thumbd_decodes_total{format="mp4"}"#] >= 4 && after[#"thumbd_decodes_total{format="matroska"}"#] == 1
                && after[#"thumbd_decodes_total{format="avi"}"#] == 1, "\(after.text.split(separator: "\n").filter { $0.contains("decodes") })")
        #expect(daemon.stop() == 0)
    }

    /// `sandbox: false` keeps FFmpeg out of the daemon: 415, naming the sandbox.
    @Test func withoutTheSandboxAVideoIsRefused() throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(extra: ["sandbox": false]),
                                     assets: ["clip.mp4": Self.video("androidx__sample.mp4")])
        try daemon.start()
        let refused = try daemon.request("/v1/thumbnails/large/clip.mp4")
        #expect(refused.status == 415 && (refused.json["message"] as? String)?.contains("sandbox") == true, "\(refused.summary)")
        #expect(daemon.stop() == 0)
    }

    /// Width and height of a JPEG or PNG (Pillow).
    static func size(of bytes: [UInt8]) throws -> (Int, Int) {
        let scratch = try ScratchDirectory("video-size")
        defer { scratch.remove() }
        let path = scratch.path("image")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let read = try ChildProcess.run("/usr/bin/env", ["python3", "-c", "import sys; from PIL import Image; print(*Image.open(sys.argv[1]).size)", path])
        let fields = read.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(fields.count == 2, "\(read.summary)")
        return (fields[0], fields[1])
    }

    /// The regular files under `folder`, relative paths, sorted.
    static func files(in folder: String) throws -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
        var files: [String] = []
        while let next = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + next, isDirectory: &isFolder), !isFolder.boolValue,
               !next.hasSuffix("-wal"), !next.hasSuffix("-shm"), !next.hasSuffix(".sqlite") {
                files.append(next)
            }
        }
        return files.sorted()
    }
}
