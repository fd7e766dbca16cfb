#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging

extension RenderWorkerMain {
    /// What must happen before the seccomp filter: libheif registers its codecs (and Debian's
    /// build scans its plugin folder, an `openat` the filter refuses), and a first HEIC and AVIF
    /// decode and AVIF encode set up libde265, dav1d and aom once. Every decode still starts the
    /// codecs' threads (libde265: one a decoder; dav1d: one a CPU), which the filter allows
    /// (see sandbox.c); nothing of theirs opens a file after this. A video worker loads FFmpeg's
    /// libraries here (dlopen opens and maps files); a still worker never does, nor the daemon.
    static func warmUpBeforeSandbox() {
        HEIFLibrary.warmUp()
        if getenv(videoVariable) != nil {
            // Without FFmpeg installed a video is refused, saying so (`VideoFile`); stills render.
            if let missing = VideoLibraries.load() { log("videos will be refused: \(missing)") }
        } else {
            VideoLibraries.withhold("this render worker decodes stills only (the daemon sends videos to a video worker)")
        }
    }

    /// Renders two small images the worker makes itself (a JPEG, and a PNG with alpha), inside
    /// its sandbox, before it says hello. A fresh process pays for its first render by faulting in
    /// code pages, binding symbols and building the Swift runtime's metadata: measured as ~15 ms
    /// more for the first avatar of a new worker than for the next (strace of a worker; the scroll
    /// benchmark's cold render of 24 thumbnails took 113 ms against 50 ms in-process without
    /// this). Paid at spawn, off any request's path.
    static func warmUp() {
        var pixels = PixelBuffer(width: 160, height: 120, channels: 4)
        for y in 0..<pixels.height {
            for x in 0..<pixels.width {
                let at = (y * pixels.width + x) * 4
                pixels.bytes[at] = UInt8(truncatingIfNeeded: x * 255 / pixels.width)
                pixels.bytes[at + 1] = UInt8(truncatingIfNeeded: y * 255 / pixels.height)
                pixels.bytes[at + 2] = UInt8(truncatingIfNeeded: (x ^ y) & 0xFF)
                pixels.bytes[at + 3] = x < 8 ? 128 : 255
            }
        }
        let requests = [
            ThumbnailRequest(kind: SlotKind(name: "warm-avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: .fill, mask: .circle), scale: 3),
            ThumbnailRequest(kind: SlotKind(name: "warm-fit", widthPoints: 64, heightPoints: 64), scale: 1),
        ]
        for format in [ImageFormat.jpeg, .png] {
            guard let bytes = try? ImageEncoder.encode(pixels, as: format, settings: EncoderSettings()) else { continue }
            _ = try? Thumbnailer().thumbnails(of: SourceBytes(bytes), requests: requests, isCancelled: { false })
        }
    }
}
