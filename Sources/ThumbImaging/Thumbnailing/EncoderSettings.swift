/// How thumbnails are written. Part of every cache key: changing it changes the bytes.
package struct EncoderSettings: Sendable, Equatable, Hashable {
    package enum Format: String, Sendable, Hashable, CaseIterable {
        /// PNG when the result has alpha, JPEG otherwise.
        case auto, jpeg, png, webp, avif
    }

    /// How a WebP is compressed.
    package enum WebPMode: String, Sendable, Hashable, CaseIterable {
        /// Lossy, except where lossless is smaller (see `WebPEncoder`).
        case auto, lossy, lossless
    }

    package var format: Format = .auto
    /// JPEG quality, 1–100.
    package var jpegQuality: Int = 85
    package var jpegProgressive: Bool = false
    /// zlib level, 0–9.
    package var pngCompressionLevel: Int = 6
    /// libwebp's lossy quality, 1–100 (lossless uses a fixed effort, see `WebPEncoder`). 78: the
    /// quality whose SSIM equals JPEG q85's on large-photos, averaged over the sample kinds
    /// (per kind 66–83; Benchmarks/webp-quality.py), at 30–45% fewer bytes than JPEG q85.
    package var webpQuality: Int = 78
    package var webpMode: WebPMode = .auto
    /// AVIF quality, 1–100 (libheif's scale, mapped by it to the AV1 quantizer). 65: between
    /// the measured 60 (SSIM at JPEG q85's for avatars, 0.003 under it for grid cells and
    /// `large`) and 70 (above it everywhere, 70–89% of JPEG's bytes); Benchmarks/avif-quality.py.
    package var avifQuality: Int = 65
    /// aom's speed, 0 (slowest, smallest) to 9. 8: within 2% of speed 6's bytes at 0.002–0.003
    /// less SSIM, 2.5–4× faster (7–44 ms a thumbnail against 27–120 ms on the large photos).
    package var avifSpeed: Int = 8

    package init() {}
}
