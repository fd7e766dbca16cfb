import ThumbImaging

/// Source bytes through the Thumbnailer: format sniffing, decode (shrink-on-load), orientation,
/// colour, resampling, masks and encoding, for several kinds from one decode as a batch does.
enum ImageDoors {
    /// Limits below the defaults (250 MP, 1 GiB of decoder memory), so that a forged header
    /// declaring a large but permitted image is refused instead of spending the fuzzer's 2 GB RSS
    /// budget: the code path (refusal from the header) is the same, only the threshold differs.
    static let thumbnailer: Thumbnailer = {
        var limits = ImageLimits()
        limits.maxPixels = 16_000_000
        limits.maxDecoderMemoryBytes = 256 << 20
        // The animation limits low too: each frame costs a render and an encode.
        limits.maxAnimationFrames = 24
        limits.maxAnimationPixels = 4_000_000
        return Thumbnailer(limits: limits)
    }()

    static let requests: [ThumbnailRequest] = {
        let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [2], mode: .fill, mask: .circle)
        // The row's crop is placed by attention, so the image doors run the saliency map and the
        // worker-answer door has a request whose placement it may carry.
        let row = SlotKind(name: "row", widthPoints: 56, heightPoints: 40, scales: [3], mode: .fill, mask: .cornerRadius(points: 8),
                           crop: .attention)
        let large = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)
        let tiny = SlotKind(name: "tiny", widthPoints: 3, heightPoints: 2, mode: .fill, upscale: true)
        var png = EncoderSettings()
        png.format = .png
        return [ThumbnailRequest(kind: avatar, scale: 2), ThumbnailRequest(kind: row, scale: 3),
                ThumbnailRequest(kind: large, scale: 1, appliesOrientation: false),
                ThumbnailRequest(kind: tiny, scale: 1, encoder: png)]
    }()

    /// An animated GIF or WebP through the frame scan, every frame's decode and the animation
    /// encoder (issue 26); any other source gives a still. Apart from `requests`, which the
    /// worker doors' seeds were written for.
    static let animatedRequest: ThumbnailRequest = {
        let moving = SlotKind(name: "moving", widthPoints: 24, heightPoints: 24, mode: .fill, animation: .keep)
        var webp = EncoderSettings()
        webp.format = .webp
        return ThumbnailRequest(kind: moving, scale: 1, encoder: webp)
    }()

    static func thumbnails(of bytes: [UInt8]) {
        let source = SourceBytes(bytes)
        _ = try? thumbnailer.thumbnails(of: source, requests: requests)
        if source.format == .gif || source.format == .webp {
            _ = try? thumbnailer.thumbnails(of: source, requests: [animatedRequest])
        }
    }
}
