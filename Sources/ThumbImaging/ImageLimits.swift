/// Limits checked from the file's header before any pixel buffer is allocated.
public struct ImageLimits: Sendable, Equatable {
    /// Largest source, in pixels (width × height). 250 MP lets a 200 MP phone photo through.
    public var maxPixels: Int = 250_000_000
    /// Largest source width or height, in pixels.
    public var maxDimension: Int = 65_500
    /// Largest source file, in bytes.
    public var maxFileBytes: Int = 256 << 20
    /// Most progressive JPEG scans decoded; real encoders write about 10.
    public var maxProgressiveScans: Int = 256
    /// Working memory libjpeg may use for one decode (coefficient buffers of progressive files), bytes.
    public var maxDecoderMemoryBytes: Int = 1 << 30

    public init() {}

    func check(width: Int, height: Int) throws(ImagingError) {
        guard width > 0, height > 0 else {
            throw .undecodable(reason: "image has no pixels (\(width)x\(height))")
        }
        if width > maxDimension || height > maxDimension {
            throw .tooLarge(reason: "\(width)x\(height) exceeds the \(maxDimension)-pixel dimension limit")
        }
        if width.multipliedReportingOverflow(by: height).partialValue > maxPixels {
            throw .tooLarge(reason: "\(width)x\(height) exceeds the \(maxPixels)-pixel limit")
        }
    }
}
