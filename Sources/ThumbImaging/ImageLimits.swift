/// Limits checked from the file's header before any pixel buffer is allocated.
package struct ImageLimits: Sendable, Equatable {
    /// Largest source, in pixels (width × height). 250 MP lets a 200 MP phone photo through.
    package var maxPixels: Int = 250_000_000
    /// Largest source width or height, in pixels.
    package var maxDimension: Int = 65_500
    /// Largest source file, in bytes.
    package var maxFileBytes: Int = 256 << 20
    /// Most progressive JPEG scans decoded; real encoders write about 10.
    package var maxProgressiveScans: Int = 256
    /// Working memory libjpeg may use for one decode (coefficient buffers of progressive files), bytes.
    package var maxDecoderMemoryBytes: Int = 1 << 30
    /// Largest output, in pixels (width × height), upscaled or not; checked against the slot's
    /// size before any work. 4096 × 4096: the largest freedesktop.org kind (xx-large, 1024 pt)
    /// at the largest scale (4x). An output that size is 64 MB as 8-bit RGBA and about 256 MB
    /// as the float image the resampler writes; an 8192 × 8192 upscale cost 23–60 s and 3 GB.
    package var maxOutputPixels: Int = 4096 * 4096

    package init() {}

    /// Refuses an output of `size` over `maxOutputPixels` (kinds built in code skip the doors
    /// that check this; the renderer checks again).
    func checkOutput(_ size: PixelSize?, scale: Int) throws(ImagingError) {
        guard let size else {
            throw .outputTooLarge(reason: "the slot at \(scale)x exceeds \(SlotBounds.maxPixelsPerSide) px a side")
        }
        if size.pixelCount > maxOutputPixels {
            throw .outputTooLarge(reason: "a \(size) output exceeds the \(maxOutputPixels)-pixel output limit")
        }
    }

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
