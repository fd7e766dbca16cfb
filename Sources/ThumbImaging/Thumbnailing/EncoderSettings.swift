/// How thumbnails are written. Part of every cache key: changing it changes the bytes.
public struct EncoderSettings: Sendable, Equatable, Hashable {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// PNG when the result has alpha, JPEG otherwise.
        case auto, jpeg, png
    }

    public var format: Format = .auto
    /// JPEG quality, 1–100.
    public var jpegQuality: Int = 85
    public var jpegProgressive: Bool = false
    /// zlib level, 0–9.
    public var pngCompressionLevel: Int = 6

    public init() {}
}
