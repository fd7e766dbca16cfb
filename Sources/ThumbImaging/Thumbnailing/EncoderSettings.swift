/// How thumbnails are written. Part of every cache key: changing it changes the bytes.
public struct EncoderSettings: Sendable, Equatable, Hashable {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// PNG when the result has alpha, JPEG otherwise.
        case auto, jpeg, png, webp, avif
    }

    /// How a WebP is compressed.
    public enum WebPMode: String, Sendable, Hashable, CaseIterable {
        /// Lossy, except where lossless is smaller (see `WebPEncoder`).
        case auto, lossy, lossless
    }

    public var format: Format = .auto
    /// JPEG quality, 1–100.
    public var jpegQuality: Int = 85
    public var jpegProgressive: Bool = false
    /// zlib level, 0–9.
    public var pngCompressionLevel: Int = 6
    /// libwebp's lossy quality, 1–100 (lossless uses a fixed effort, see `WebPEncoder`). 78: the
    /// quality whose SSIM equals JPEG q85's on large-photos, averaged over the sample kinds
    /// (per kind 66–83; Benchmarks/webp-quality.py), at 30–45% fewer bytes than JPEG q85.
    public var webpQuality: Int = 78
    public var webpMode: WebPMode = .auto
    /// AVIF quality, 1–100 (libheif's scale, mapped by it to the AV1 quantizer).
    public var avifQuality: Int = 60
    /// aom's speed, 0 (slowest, smallest) to 9.
    public var avifSpeed: Int = 6

    public init() {}
}
