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
    /// Most frames of an animation a kind that keeps animation decodes (imgproxy's
    /// MAX_ANIMATION_FRAMES); counted from the file's structure before any frame is decoded.
    package var maxAnimationFrames: Int = 300
    /// Most pixels an animation decodes in all, frames × canvas pixels. Every frame is
    /// composited at the full canvas and resampled: about 10 ns a canvas pixel here (LZW or VP8,
    /// compositing, the block shrink and Lanczos), so 400 MP is about 4 s of one core, the
    /// same order as the slowest still this daemon accepts (a 250 MP photo).
    package var maxAnimationPixels: Int = 400_000_000
    /// A video's codecs and how much of it a poster may read (`formats.video`).
    package var video = VideoLimits()

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

    /// Refuses an animation of `frames` frames on a `width` × `height` canvas over
    /// `maxAnimationFrames` or `maxAnimationPixels`; `what` names the source ("GIF"). As
    /// `.outputTooLarge` (413, the CLI's data-error exit, as `.tooLarge`): only a kind that keeps
    /// animation is refused, so it must not be remembered against the file as `.tooLarge` is
    /// (a still kind of the same file was refused too, until the file changed).
    func checkAnimation(_ what: String, frames: Int, width: Int, height: Int) throws(ImagingError) {
        if frames > maxAnimationFrames {
            throw .outputTooLarge(reason: "\(what) animation has \(frames) frames, over the \(maxAnimationFrames)-frame limit (maxAnimationFrames)")
        }
        let (canvas, canvasOverflow) = width.multipliedReportingOverflow(by: height)
        let (total, overflow) = canvas.multipliedReportingOverflow(by: frames)
        if canvasOverflow || overflow || total > maxAnimationPixels {
            let shown = canvasOverflow || overflow ? "more than \(Int.max)" : "\(total)"
            throw .outputTooLarge(reason: "\(what) animation of \(frames) frames of \(width)x\(height) is \(shown) pixels, "
                            + "over the \(maxAnimationPixels)-pixel limit (maxAnimationPixels)")
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
