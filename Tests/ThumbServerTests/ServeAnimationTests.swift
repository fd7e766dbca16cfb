import Foundation
import Testing
import ThumbTestSupport

/// A kind with `"animation": "keep"` through the daemon (issue 26): an animated WebP to a
/// request that takes WebP, a still to one that does not, 413 past `limits.maxAnimationFrames`
/// before any frame is decoded, and the kind's `animation` in `/v1/kinds`.
@Suite("thumbd serve: animated thumbnails")
struct ServeAnimationTests {
    /// An animated GIF of `frames` frames (Pillow), 160x120, 40 ms each, every frame another colour.
    static func animatedGIF(frames: Int, in scratch: ScratchDirectory) throws -> String {
        let path = scratch.path("anim-\(frames).gif")
        let script = """
        import sys
        from PIL import Image, ImageDraw
        frames = []
        for i in range(int(sys.argv[2])):
            im = Image.new("RGB", (160, 120), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
            ImageDraw.Draw(im).rectangle((i * 4 % 120, 20, i * 4 % 120 + 30, 80), fill=(255, 255, 255))
            frames.append(im)
        frames[0].save(sys.argv[1], save_all=True, append_images=frames[1:], duration=40, loop=0)
        """
        let made = try ChildProcess.run("/usr/bin/env", ["python3", "-c", script, path, "\(frames)"], timeout: 120)
        try #require(made.exitCode == 0, "Pillow could not write the GIF: \(made.summary)")
        return path
    }

    /// Frames and their summed durations as Pillow reads them: (n_frames, ms).
    static func frames(of bytes: [UInt8], in scratch: ScratchDirectory) throws -> (count: Int, durationMs: Int) {
        let path = scratch.path("read-\(UUID().uuidString)")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let script = """
        import sys
        from PIL import Image
        im = Image.open(sys.argv[1])
        total = 0
        for i in range(getattr(im, "n_frames", 1)):
            im.seek(i)
            im.load()
            total += im.info.get("duration", 0) or 0
        print(getattr(im, "n_frames", 1), total)
        """
        let read = try ChildProcess.run("/usr/bin/env", ["python3", "-c", script, path], timeout: 60)
        try #require(read.exitCode == 0, "Pillow could not read the thumbnail: \(read.summary)")
        let fields = read.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(fields.count == 2, "\(read.stdout)")
        return (fields[0], fields[1])
    }

    @Test("keep: animated WebP to WebP, a still JPEG to a request without it, 413 over maxAnimationFrames, listed in /v1/kinds")
    func animationThroughTheDaemon() throws {
        let scratch = try ScratchDirectory("serve-anim")
        defer { scratch.remove() }
        let short = try Self.animatedGIF(frames: 12, in: scratch)
        let long = try Self.animatedGIF(frames: 30, in: scratch)
        var kinds = ServeDaemon.kinds
        kinds["anim"] = ["width": 80, "height": 60, "mode": "fit", "animation": "keep"]
        let daemon = try ServeDaemon(config: ServeDaemon.config(kinds: kinds, extra: ["limits": ["maxAnimationFrames": 20]]),
                                     assets: ["short.gif": short, "long.gif": long])
        try daemon.start()

        let animated = try daemon.request("/v1/thumbnails/anim/short.gif?format=webp")
        #expect(animated.status == 200 && animated.headers["content-type"] == "image/webp", "\(animated.summary)")
        let readback = try Self.frames(of: animated.body, in: scratch)
        #expect(readback.count == 12 && readback.durationMs == 12 * 40, "\(readback)")

        let still = try daemon.request("/v1/thumbnails/anim/short.gif", headers: ["Accept: image/jpeg"])
        #expect(still.status == 200 && still.headers["content-type"] == "image/jpeg", "\(still.summary)")
        #expect(try Self.frames(of: still.body, in: scratch).count == 1)

        let refused = try daemon.request("/v1/thumbnails/anim/long.gif?format=webp")
        #expect(refused.status == 413, "\(refused.summary)")
        #expect((refused.json["message"] as? String)?.contains("30") == true, "names the frame count: \(refused.summary)")
        // The same file under a still kind renders: the limit bounds animations, not sources.
        let first = try daemon.request("/v1/thumbnails/large/long.gif?format=webp")
        #expect(first.status == 200, "\(first.summary)")
        #expect(try Self.frames(of: first.body, in: scratch).count == 1)

        let listing = try #require(try daemon.request("/v1/kinds").json["kinds"] as? [[String: Any]])
        #expect(listing.first { $0["name"] as? String == "anim" }?["animation"] as? String == "keep")
        #expect(listing.first { $0["name"] as? String == "large" }?["animation"] as? String == "still")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
