import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Issue 26: a kind with `"animation": "keep"` turns an animated GIF or WebP into an animated
/// WebP (every frame through the one render loop), bounded by `maxAnimationFrames` and
/// `maxAnimationPixels` before any frame is decoded.
@Suite("Animated thumbnails")
struct AnimationTests {
    /// 160x120 over a fixed gradient: a moving disc and a growing bar, delays 40/70/100 ms,
    /// loop 0, every 4th frame from the 2nd with a transparent corner and disposal 2 (`webp`
    /// true: an animated WebP, lossless, of the same frames).
    static let generator = """
        import sys
        from PIL import Image, ImageDraw
        path, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        w, h = 160, 120
        background = Image.new('RGBA', (w, h))
        background.putdata([((x * 255) // w, (y * 255) // h, ((x + y) * 3) % 256, 255) for y in range(h) for x in range(w)])
        frames, durations, disposals = [], [], []
        for i in range(n):
            im = background.copy()
            d = ImageDraw.Draw(im)
            x = (i * 7) % 130
            d.ellipse((x, 20 + (i * 3) % 60, x + 30, 50 + (i * 3) % 60), fill=(255, 240, 40, 255))
            d.rectangle((0, 100, (i * 13) % 160, 119), fill=(20, 200, 60, 255))
            if i % 4 == 1:
                d.rectangle((120, 0, 159, 30), fill=(0, 0, 0, 0))
            frames.append(im)
            durations.append([40, 70, 100][i % 3])
            disposals.append(2 if i % 4 == 1 else 1)
        if n == 1:
            frames[0].save(path)
        elif kind == 'webp':
            frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0, lossless=True)
        else:
            frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0, disposal=disposals)
        """

    /// What Pillow reads from an animation: frame count, loop, each frame's duration (ms), and
    /// for the frames asked, the mean absolute difference (0–255, RGB over grey) between the
    /// thumbnail's frame and the source's frame resized (Lanczos) to the thumbnail, and the
    /// same against the source's frame 50 ahead (a wrong frame) and frame 0 (a frozen one).
    static let reader = """
        import sys, json
        from PIL import Image
        def frames(path):
            im = Image.open(path)
            out = []
            for i in range(im.n_frames):
                im.seek(i)
                out.append((im.convert('RGBA'), im.info.get('duration')))
            return im, out
        def over_grey(im):
            grey = Image.new('RGBA', im.size, (128, 128, 128, 255))
            return Image.alpha_composite(grey, im).convert('RGB')
        def mad(a, b):
            pa, pb = a.tobytes(), b.tobytes()
            return sum(abs(x - y) for x, y in zip(pa, pb)) / len(pa)
        thumb_path, source_path = sys.argv[1], sys.argv[2]
        thumb, thumb_frames = frames(thumb_path)
        result = {'frames': len(thumb_frames), 'loop': thumb.info.get('loop'), 'durations': [d for _, d in thumb_frames],
                  'size': list(thumb.size), 'format': thumb.format}
        if source_path != '-':
            source, source_frames = frames(source_path)
            result['sourceDurations'] = [d for _, d in source_frames]
            result['sourceLoop'] = source.info.get('loop')
            def resized(i):
                return over_grey(source_frames[i][0].resize(thumb.size, Image.LANCZOS))
            checks = []
            for i in [int(a) for a in sys.argv[3:]]:
                mine = over_grey(thumb_frames[i][0])
                checks.append({'frame': i, 'same': mad(mine, resized(i)),
                               'ahead': mad(mine, resized((i + 50) % len(source_frames))), 'first': mad(mine, resized(0))})
            result['checks'] = checks
        print(json.dumps(result))
        """

    struct Readback: Decodable {
        struct Check: Decodable { var frame: Int; var same: Double; var ahead: Double; var first: Double }
        var frames: Int
        var loop: Int?
        var durations: [Int?]
        var size: [Int]
        var format: String
        var sourceDurations: [Int?]?
        var sourceLoop: Int?
        var checks: [Check]?
    }

    static func scratch(_ name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-anim-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent(name)
    }

    static func generate(frames: Int, as kind: String) throws -> URL {
        let file = try scratch("source.\(kind)")
        _ = try Python.run(generator, [file.path, "\(frames)", kind])
        return file
    }

    static func readback(_ thumbnail: [UInt8], source: URL?, checking frames: [Int] = []) throws -> Readback {
        let file = try scratch("thumb.webp")
        try Data(thumbnail).write(to: file)
        let output = try Python.run(reader, [file.path, source?.path ?? "-"] + frames.map(String.init))
        return try JSONDecoder().decode(Readback.self, from: output)
    }

    static func request(animation: SlotKind.Animation = .keep, format: EncoderSettings.Format = .webp,
                        mode: SlotKind.ContentMode = .fit, crop: SlotKind.CropMode = .centre) -> ThumbnailRequest {
        var encoder = EncoderSettings()
        encoder.format = format
        let kind = SlotKind(name: "anim", widthPoints: 80, heightPoints: 60, mode: mode, crop: crop, animation: animation)
        return ThumbnailRequest(kind: kind, scale: 1, encoder: encoder)
    }

    @Test("a 100-frame GIF gives an animated WebP of the same frames, timing and loop, smaller, each frame its own")
    func gifToAnimatedWebP() throws {
        let gif = try Self.generate(frames: 100, as: "gif")
        let source = try loadSource(gif.path)
        let thumbnail = try Thumbnailer().thumbnail(of: source, request: Self.request())
        #expect(thumbnail.format == .webp)
        #expect((thumbnail.width, thumbnail.height) == (80, 60))
        #expect(thumbnail.bytes.count < source.count, "\(thumbnail.bytes.count) bytes from a \(source.count)-byte GIF")
        let read = try Self.readback(thumbnail.bytes, source: gif, checking: [0, 1, 2, 37, 50, 98, 99])
        #expect(read.format == "WEBP" && read.size == [80, 60])
        #expect(read.frames == 100)
        #expect(read.durations == read.sourceDurations, "\(read.durations) against the GIF's \(read.sourceDurations ?? [])")
        #expect(read.loop == 0 && read.sourceLoop == 0)
        // Measured against Pillow's frames: 6.5–7.2 levels on every frame checked (lossy q78
        // smooths the dither of the GIF's quantized gradient that a Lanczos resize of the GIF
        // keeps); 8.5 leaves room for libwebp's versions. The frame 50 ahead measured 13.9–16.5
        // (the disc and bar elsewhere), frame 0 from frame 37 on likewise: a wrong order or a
        // frozen first frame is 5 levels further off than the right frame.
        for check in read.checks ?? [] {
            #expect(check.same < 8.5, "frame \(check.frame): \(check.same) from Pillow's frame")
            #expect(check.ahead > check.same + 5, "frame \(check.frame): \(check.ahead) from the frame 50 ahead")
            if check.frame >= 37 { #expect(check.first > check.same + 5, "frame \(check.frame): \(check.first) from frame 0") }
        }
        #expect(read.checks?.count == 7)
    }

    @Test("an animated WebP source gives an animated WebP of the same frames and timing")
    func webpToAnimatedWebP() throws {
        let webp = try Self.generate(frames: 24, as: "webp")
        let source = try loadSource(webp.path)
        let thumbnail = try Thumbnailer().thumbnail(of: source, request: Self.request())
        let read = try Self.readback(thumbnail.bytes, source: webp, checking: [0, 5, 23])
        #expect(read.frames == 24)
        #expect(read.durations == read.sourceDurations)
        #expect(read.loop == read.sourceLoop)
        for check in read.checks ?? [] { #expect(check.same < 8.5, "frame \(check.frame): \(check.same)") }
    }

    /// A GIF of `frames` frames whose block structure is sound and whose LZW data is one byte:
    /// any decode of it fails at the first row.
    static func brokenGIF(frames: Int, width: Int = 160, height: Int = 120) -> [UInt8] {
        func word(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        var bytes = Array("GIF89a".utf8) + word(width) + word(height) + [0x80, 0, 0, 0, 0, 0, 255, 255, 255]
        bytes += [0x21, 0xFF, 0x0B] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        for _ in 0..<frames {
            bytes += [0x21, 0xF9, 4, 0, 10, 0, 0, 0]
            bytes += [0x2C] + word(0) + word(0) + word(width) + word(height) + [0, 2, 1, 0x00, 0]
        }
        return bytes + [0x3B]
    }

    static func failure(_ body: () throws -> Void) -> ImagingError? {
        do { try body() } catch { return error as? ImagingError }
        return nil
    }

    @Test("maxAnimationFrames refuses a longer GIF (413, not remembered against the file) before decoding a frame; one within it is decoded")
    func frameLimit() throws {
        var limits = ImageLimits()
        limits.maxAnimationFrames = 100
        let thumbnailer = Thumbnailer(limits: limits)
        let over = SourceBytes(Self.brokenGIF(frames: 101))
        let refused = Self.failure { _ = try thumbnailer.thumbnail(of: over, request: Self.request()) }
        guard case .outputTooLarge(let reason) = refused else { Issue.record("expected .outputTooLarge, got \(String(describing: refused))"); return }
        #expect(reason.contains("101 frames") && reason.contains("100-frame"), "\(reason)")
        // The same structure at the limit is decoded, and its data fails: the refusal above came first.
        let within = SourceBytes(Self.brokenGIF(frames: 100))
        let decoded = Self.failure { _ = try thumbnailer.thumbnail(of: within, request: Self.request()) }
        guard case .undecodable = decoded else { Issue.record("expected .undecodable, got \(String(describing: decoded))"); return }
    }

    @Test("maxAnimationPixels refuses frames × canvas over it before decoding")
    func pixelLimit() throws {
        var limits = ImageLimits()
        limits.maxAnimationPixels = 10 * 160 * 120 - 1
        let thumbnailer = Thumbnailer(limits: limits)
        let refused = Self.failure { _ = try thumbnailer.thumbnail(of: SourceBytes(Self.brokenGIF(frames: 10)), request: Self.request()) }
        guard case .outputTooLarge(let reason) = refused else { Issue.record("expected .outputTooLarge, got \(String(describing: refused))"); return }
        #expect(reason.contains("\(10 * 160 * 120) pixels") && reason.contains("\(limits.maxAnimationPixels)-pixel"), "\(reason)")
        let within = Self.failure { _ = try thumbnailer.thumbnail(of: SourceBytes(Self.brokenGIF(frames: 9)), request: Self.request()) }
        guard case .undecodable = within else { Issue.record("expected .undecodable, got \(String(describing: within))"); return }
    }

    @Test("a still kind renders the first frame of an animation over the limits, as before")
    func stillKindIgnoresLimits() throws {
        var limits = ImageLimits()
        limits.maxAnimationFrames = 2
        let gif = try Self.generate(frames: 5, as: "gif")
        let source = try loadSource(gif.path)
        let still = try Thumbnailer(limits: limits).thumbnail(of: source, request: Self.request(animation: .still))
        let reference = try Thumbnailer().thumbnail(of: source, request: Self.request(animation: .still))
        #expect(still.bytes == reference.bytes)
        #expect(try Self.readback(still.bytes, source: nil).frames == 1)
    }

    @Test("a keep kind gives a still for a still source, and the first frame as a still where the output is not WebP")
    func stillOutputs() throws {
        let gif = try Self.generate(frames: 1, as: "gif")
        let one = try Thumbnailer().thumbnail(of: try loadSource(gif.path), request: Self.request())
        #expect(one.format == .webp)
        #expect(try Self.readback(one.bytes, source: nil).frames == 1)
        let animated = try loadSource(try Self.generate(frames: 6, as: "gif").path)
        let png = try Thumbnailer().thumbnail(of: animated, request: Self.request(format: .png))
        let firstFrame = try Thumbnailer().thumbnail(of: animated, request: Self.request(animation: .still, format: .png))
        #expect(png.format == .png && png.bytes == firstFrame.bytes)
    }

    @Test("an attention crop is placed once and held for every frame")
    func cropHeld() throws {
        let gif = try Self.generate(frames: 12, as: "gif")
        var request = Self.request(mode: .fill, crop: .attention)
        request.kind.widthPoints = 40
        let set = try Thumbnailer().thumbnailSet(of: try loadSource(gif.path), requests: [request], placeholder: .skip)
        #expect(set.placements.count == 1)
        let read = try Self.readback(set.thumbnails[0].bytes, source: nil)
        #expect(read.frames == 12 && read.size == [40, 60])
    }

    @Test("the GIF scan counts frames, delays, disposals and the loop without decoding")
    func scan() throws {
        let bytes = Self.brokenGIF(frames: 3)
        let scan = try bytes.withUnsafeBytes { (raw) throws(ImagingError) in try GIFAnimationScan(raw) }
        #expect(scan.frames.count == 3 && scan.loopCount == 0 && scan.stoppedEarly == nil)
        #expect(scan.frames.allSatisfy { $0.delayCentiseconds == 10 && $0.codeSize == 2 && $0.width == 160 })
        let cut = try Array(bytes.prefix(bytes.count - 3)).withUnsafeBytes { (raw) throws(ImagingError) in try GIFAnimationScan(raw) }
        #expect(cut.frames.count == 3 && cut.stoppedEarly != nil)
        // Past the records it keeps, frames are counted only: a file of countless empty frames
        // costs no record each before the limit refuses it.
        let many = Self.brokenGIF(frames: 40)
        let counted = try many.withUnsafeBytes { (raw) throws(ImagingError) in try GIFAnimationScan(raw, maxStoredFrames: 5) }
        #expect(counted.frameCount == 40 && counted.frames.count == 5 && counted.stoppedEarly == nil)
    }
}
