import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Videos (issue 38): the poster's rules as plain values, the display matrix, the sandbox-only
/// rule, HDR posters against the stills' reference operator, and the animated preview. The walk
/// of the whole video corpus runs through the sandboxed worker (`WorkerVideoTests`).
@Suite("Video posters and previews")
struct VideoTests {
    /// In this test process, as in the worker: the decoder on.
    static let thumbnailer = Thumbnailer(decodesSandboxOnlyFormats: true)

    static func video(_ name: String) throws -> CorpusManifest.Row {
        try #require(try CorpusManifest.media().first { $0.set == "media/video" && $0.file == name }, "\(name) is in media-manifest.tsv")
    }

    @Test func thePosterIsSoughtNearATenthOfTheClip() {
        #expect(PosterSearch(durationSeconds: 4, framePixels: 640 * 360).targetSeconds == 0.4)
        #expect(PosterSearch(durationSeconds: 7200, framePixels: 640 * 360).targetSeconds == PosterSearch.maxSeekSeconds)
        #expect(PosterSearch(durationSeconds: nil, framePixels: 640 * 360).targetSeconds == 0)
        #expect(PosterSearch(durationSeconds: .nan, framePixels: 640 * 360).targetSeconds == 0)
        // The in-order search costs at most its pixel budget, and always a few frames.
        #expect(PosterSearch(durationSeconds: 10, framePixels: 3840 * 2160).maxSequentialFrames == PosterSearch.sequentialPixelBudget / (3840 * 2160))
        #expect(PosterSearch(durationSeconds: 10, framePixels: 320 * 240).maxSequentialFrames == 240)
        #expect(PosterSearch(durationSeconds: 10, framePixels: Int.max).maxSequentialFrames == 8)
    }

    @Test func blackBlankAndFadedFramesAreNoPicture() {
        #expect(!LumaStatistics(samples: Array(repeating: 16, count: 100), bits: 8, limitedRange: true).isPicture)
        #expect(!LumaStatistics(samples: Array(repeating: 128, count: 100), bits: 8, limitedRange: false).isPicture)
        #expect(!LumaStatistics(samples: (0..<100).map { 250 + $0 % 4 }, bits: 8, limitedRange: false).isPicture)
        // A fade: low contrast in the dark.
        #expect(!LumaStatistics(samples: (0..<100).map { 10 + $0 % 8 }, bits: 8, limitedRange: false).isPicture)
        let picture = LumaStatistics(samples: (0..<100).map { $0 * 2 }, bits: 8, limitedRange: false)
        #expect(picture.isPicture)
        // Ten bits read as eight; video range stretched.
        let tenBit = LumaStatistics(samples: (0..<100).map { $0 * 8 }, bits: 10, limitedRange: false)
        #expect(abs(tenBit.mean - picture.mean) < 0.01 && abs(tenBit.deviation - picture.deviation) < 0.01)
        #expect(LumaStatistics(samples: [16, 235], bits: 8, limitedRange: true).mean == 127.5)
        #expect(LumaStatistics(samples: [Int](), bits: 8, limitedRange: false).isPicture == false)
    }

    /// FFmpeg's display matrices (16.16 fixed point, row-major) of a phone's portrait clip, its
    /// opposite, a half turn, a transpose (rotation and mirror) and a plain mirror.
    @Test func displayMatricesBecomeOrientations() {
        let one: Int32 = 1 << 16, w: Int32 = 1 << 30
        #expect(VideoOrientation.orientation(matrix: [0, -one, 0, one, 0, 0, 0, 0, w], rotationDegrees: -90) == .right)
        #expect(VideoOrientation.orientation(matrix: [0, one, 0, -one, 0, 0, 0, 0, w], rotationDegrees: 90) == .left)
        #expect(VideoOrientation.orientation(matrix: [-one, 0, 0, 0, -one, 0, 0, 0, w], rotationDegrees: 180) == .down)
        #expect(VideoOrientation.orientation(matrix: [0, one, 0, one, 0, 0, 0, 0, w], rotationDegrees: -90) == .leftMirrored)
        #expect(VideoOrientation.orientation(matrix: [0, -one, 0, -one, 0, 0, 0, 0, w], rotationDegrees: 90) == .rightMirrored)
        #expect(VideoOrientation.orientation(matrix: [-one, 0, 0, 0, one, 0, 0, 0, w], rotationDegrees: -180) == .upMirrored)
        #expect(VideoOrientation.orientation(matrix: [one, 0, 0, 0, -one, 0, 0, 0, w], rotationDegrees: 0) == .downMirrored)
        #expect(VideoOrientation.orientation(matrix: [one, 0, 0, 0, one, 0, 0, 0, w], rotationDegrees: 0) == .up)
        // Degenerate or oblique: left as stored.
        #expect(VideoOrientation.orientation(matrix: [0, 0, 0, 0, 0, 0, 0, 0, w], rotationDegrees: .nan) == .up)
        #expect(VideoOrientation.orientation(matrix: [one, one, 0, -one, one, 0, 0, 0, w], rotationDegrees: 45) == .up)
    }

    /// Outside the sandbox a video is refused, never decoded (the daemon with `sandbox: false`).
    @Test func videoDecodesOnlyWhereTheSandboxIs() throws {
        let source = try loadSource(try Self.video("androidx__sample.mp4").path)
        #expect(source.format == .mp4 && source.format?.row.sandboxOnly == true)
        let request = ThumbnailRequest(kind: SlotKind(name: "large", widthPoints: 256, heightPoints: 256), scale: 1)
        #expect {
            try Thumbnailer().thumbnail(of: source, request: request)
        } throws: { error in
            guard case ImagingError.unsupportedFormat(let reason) = error else { return false }
            return reason.contains("sandbox")
        }
        let rendered = try Self.thumbnailer.render(source, request: request)
        #expect(rendered.pixels.width == 256 && rendered.pixels.height == 171)
    }

    // MARK: HDR

    /// The HLG and PQ clips' posters against the HDR stills' reference: the same frame decoded
    /// apart from thumbd (ffmpeg to 16-bit RGB, its colour matrix from the stream), tone-mapped
    /// by the numpy operator of `HDRToneMappingTests.reference`; mean luminance within 10%.
    @Test("HDR posters' mean luminance within 10% of the reference", arguments: [
        "androidx__hlg10-color-test.mp4", "androidx__hdr10-av1.mp4", "gen__hlg_hevc_10bit_720p.mov", "gen__pq_hdr10_hevc_720p.mp4",
    ])
    func hdrPosterLuminance(_ name: String) throws {
        let row = try Self.video(name)
        let source = try loadSource(row.path)
        let format = try #require(source.format)
        let poster = try #require(try VideoLoader(source: source, format: format, limits: ImageLimits(), isCancelled: nil).posterSeconds)
        let whole = SlotKind(name: "whole", widthPoints: 4096, heightPoints: 4096)
        let rendered = try Self.thumbnailer.render(source, request: ThumbnailRequest(kind: whole, scale: 1))
        let shown = HDRToneMappingTests.meanLuminance(rendered.pixels)

        let scratch = try ScratchDirectory("video-hdr")
        defer { scratch.remove() }
        let sixteen = scratch.path + "/frame.png"
        // Half a frame early: ffmpeg's accurate seek gives the first frame at or after the time.
        let extracted = try ChildProcess.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-ss", String(format: "%.3f", max(0, poster - 0.01)),
                                                             "-i", row.path, "-frames:v", "1", "-pix_fmt", "rgb48be", "-y", sixteen])
        try #require(extracted.exitCode == 0, "ffmpeg: \(extracted.summary)")
        let probe = try ChildProcess.run("/usr/bin/env", ["ffprobe", "-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1",
                                                         "-show_frames", "-show_entries", "frame_side_data=max_content", row.path])
        let maxCLL = probe.stdout.firstMatch(of: /max_content=(\d+)/).map { String($0.1) }
        let expected = try HDRToneMappingTests.reference(sixteenBitPNG: sixteen, peak: maxCLL ?? "1000", primaries: "2020",
                                                         transfer: row.detail.contains("arib-std-b67") ? "hlg" : "pq", label: name)
        print("HDR video \(name) at \(poster) s: mean luminance \(shown), reference \(expected.toneMapped), sRGB-curve \(expected.sRGBCurve)")
        #expect(abs(shown - expected.toneMapped) / expected.toneMapped < 0.10,
                "\(name): mean luminance \(shown), reference \(expected.toneMapped) (the sRGB-curve reading is \(expected.sRGBCurve))")
    }

    // MARK: Previews

    static func previewKind(_ points: Double = 160) -> SlotKind {
        SlotKind(name: "preview", widthPoints: points, heightPoints: points, animation: .keep)
    }

    static func webp() -> EncoderSettings {
        var encoder = EncoderSettings()
        encoder.format = .webp
        return encoder
    }

    /// A `keep` kind turns the clip into an animated WebP: the configured number of frames
    /// (within `maxAnimationFrames`), each the thumbnail's size, each different, following the
    /// clip in order: each preview frame is most like the clip's frame at its sample time
    /// (ffmpeg's decode of every frame, at the preview's size), and those come in order.
    @Test func aKeepKindGetsAPreviewThatFollowsTheClip() throws {
        let row = try Self.video("gen__animated_preview_320x240.mp4")
        let source = try loadSource(row.path)
        let limits = ImageLimits()
        let thumbnail = try Thumbnailer(limits: limits, decodesSandboxOnlyFormats: true)
            .thumbnail(of: source, request: ThumbnailRequest(kind: Self.previewKind(), scale: 1, encoder: Self.webp()))
        #expect(thumbnail.format == .webp && thumbnail.width == 160 && thumbnail.height == 120)
        let frames = try Self.frames(of: thumbnail)
        #expect(frames.count == limits.video.previewFrames && frames.count <= limits.maxAnimationFrames)
        #expect(frames.allSatisfy { $0.pixels.width == 160 && $0.pixels.height == 120 })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.pixels.bytes != $1.pixels.bytes }, "every frame differs from the one before")
        try Self.expectFollowsTheClip(frames.map(\.pixels), row: row, clipFrames: 100, seconds: 4)
        // Real time for a 4 s clip of 24 frames: 4000 / 24 ms a frame, within the 100–500 ms bounds.
        #expect(frames.allSatisfy { abs($0.milliseconds - 167) <= 1 })
    }

    /// A clip longer than the limits is sampled, not refused: five frames when five are allowed,
    /// over the whole clip; a limit that leaves no room for two gives the still poster, saying why.
    @Test func aClipPastTheLimitsIsSampledNotRefused() throws {
        let row = try Self.video("gen__animated_preview_320x240.mp4")
        let source = try loadSource(row.path)
        var limits = ImageLimits()
        limits.maxAnimationFrames = 5
        let request = ThumbnailRequest(kind: Self.previewKind(), scale: 1, encoder: Self.webp())
        let five = try Self.frames(of: try Thumbnailer(limits: limits, decodesSandboxOnlyFormats: true).thumbnail(of: source, request: request))
        #expect(five.count == 5)
        try Self.expectFollowsTheClip(five.map(\.pixels), row: row, clipFrames: 100, seconds: 4)
        #expect(five.allSatisfy { $0.milliseconds == 500 }, "4 s in 5 frames is 800 ms each, shown at most 500 ms")

        limits = ImageLimits()
        limits.maxAnimationPixels = 320 * 240
        let still = try Thumbnailer(limits: limits, decodesSandboxOnlyFormats: true).thumbnail(of: source, request: request)
        #expect(try Self.frames(of: still).count == 1)
        #expect(still.warning?.contains("animation limits") == true, "\(still.warning ?? "no warning")")
    }

    /// Each of `preview`'s frames is closest to the clip's frame at the middle of its span of the
    /// clip (within two frames), and those frames come in order.
    static func expectFollowsTheClip(_ preview: [PixelBuffer], row: CorpusManifest.Row, clipFrames: Int, seconds: Double) throws {
        let (width, height) = (preview[0].width, preview[0].height)
        let decoded = try ChildProcess.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-i", row.path, "-vf", "scale=\(width):\(height)",
                                                           "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], timeout: 120)
        let frameBytes = width * height * 3
        let clip = [UInt8](decoded.stdoutData)
        try #require(decoded.exitCode == 0 && clip.count == clipFrames * frameBytes, "ffmpeg: \(decoded.summary)")
        var matched: [Int] = []
        for frame in preview {
            var best = (index: -1, difference: Int.max)
            for index in 0..<clipFrames {
                var difference = 0
                let base = index * frameBytes
                for pixel in 0..<(width * height) {
                    for channel in 0..<3 {
                        difference += abs(Int(clip[base + pixel * 3 + channel]) - Int(frame.bytes[pixel * frame.channels + channel]))
                    }
                }
                if difference < best.difference { best = (index, difference) }
            }
            matched.append(best.index)
        }
        let expected = preview.indices.map { Int(((Double($0) + 0.5) * seconds / Double(preview.count)) * Double(clipFrames) / seconds) }
        #expect(zip(matched, matched.dropFirst()).allSatisfy { $0 < $1 }, "the preview's frames are the clip's \(matched), not in order")
        #expect(zip(matched, expected).allSatisfy { abs($0 - $1) <= 2 }, "the clip's frames \(matched), sampled at \(expected)")
    }

    /// The frames of an animated WebP (or the one of a still), decoded by thumbd's own reader.
    static func frames(of thumbnail: Thumbnail) throws -> [(pixels: PixelBuffer, milliseconds: Int)] {
        let source = SourceBytes(thumbnail.bytes)
        guard let animation = try WebPAnimation.open(source, limits: ImageLimits()) else {
            let whole = SlotKind(name: "whole", widthPoints: 4096, heightPoints: 4096)
            return [(try Thumbnailer().render(source, request: ThumbnailRequest(kind: whole, scale: 1)).pixels, 0)]
        }
        var frames: [(PixelBuffer, Int)] = []
        while let frame = try animation.next(isCancelled: nil) { frames.append((frame.pixels, frame.durationMilliseconds)) }
        return frames
    }
}
