import CWebP

/// Every frame of an animated WebP through libwebp's `WebPAnimDecoder`, which composites them
/// (blending and disposal) onto an RGBA canvas as browsers show it. The frame count and canvas
/// come from `WebPDemux` (the RIFF chunks only) and are held to the limits before the decoder
/// exists: it allocates two canvases at once.
final class WebPAnimation: AnimationFrames {
    let canvasWidth: Int
    let canvasHeight: Int
    let frameCount: Int
    let loopCount: Int
    var warning: String? { nil }

    private let source: SourceBytes // the decoder reads it in place: kept alive with it
    private let decoder: OpaquePointer
    private var previousEnd = 0
    private var decodedFrames = 0

    private init(source: SourceBytes, decoder: OpaquePointer, canvas: (Int, Int), frames: Int, loops: Int) {
        (self.source, self.decoder, frameCount, loopCount) = (source, decoder, frames, loops)
        (canvasWidth, canvasHeight) = canvas
    }

    deinit { WebPAnimDecoderDelete(decoder) }

    /// The animation of `source`, or nil when it is a still (no ANIM, or one frame).
    static func open(_ source: SourceBytes, limits: ImageLimits) throws(ImagingError) -> WebPAnimation? {
        var data = WebPData(bytes: source.pointer, size: source.count)
        guard let demuxer = WebPDemux(&data) else {
            throw .undecodable(reason: "WebP: libwebp's demuxer cannot parse the container")
        }
        let flags = WebPDemuxGetI(demuxer, WEBP_FF_FORMAT_FLAGS)
        let frames = Int(WebPDemuxGetI(demuxer, WEBP_FF_FRAME_COUNT))
        let width = Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_WIDTH)), height = Int(WebPDemuxGetI(demuxer, WEBP_FF_CANVAS_HEIGHT))
        let loops = Int(WebPDemuxGetI(demuxer, WEBP_FF_LOOP_COUNT))
        WebPDemuxDelete(demuxer)
        guard flags & ANIMATION_FLAG.rawValue != 0, frames > 1 else { return nil }
        try limits.check(width: width, height: height)
        try limits.checkAnimation("WebP", frames: frames, width: width, height: height)
        let bytes = width * height * 4 * 2 // within maxPixels: no overflow
        if bytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "WebP animation canvas \(width)x\(height) needs \(bytes) bytes, over the \(limits.maxDecoderMemoryBytes)-byte decoder memory limit")
        }
        var options = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&options) != 0 else { throw .undecodable(reason: "libwebp refused its own ABI version") }
        options.color_mode = MODE_RGBA
        options.use_threads = 0
        guard let decoder = WebPAnimDecoderNew(&data, &options) else {
            throw .undecodable(reason: "WebP: libwebp's animation decoder refused the file")
        }
        return WebPAnimation(source: source, decoder: decoder, canvas: (width, height), frames: frames, loops: loops)
    }

    func next(isCancelled: CancellationCheck?) throws(ImagingError) -> (pixels: PixelBuffer, durationMilliseconds: Int)? {
        guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
        if isCancelled?() == true { throw .cancelled }
        var buffer: UnsafeMutablePointer<UInt8>?
        var end: Int32 = 0
        guard WebPAnimDecoderGetNext(decoder, &buffer, &end) != 0, let buffer else {
            throw .undecodable(reason: "WebP: frame \(decodedFrames + 1) of \(frameCount) cannot be decoded")
        }
        decodedFrames += 1
        // Timestamps are the frames' ends, summed by libwebp from 24-bit durations: no overflow.
        let duration = Int(end) - previousEnd
        previousEnd = Int(end)
        let pixels = PixelBuffer(width: canvasWidth, height: canvasHeight, channels: 4,
                                 bytes: Array(UnsafeBufferPointer(start: buffer, count: canvasWidth * canvasHeight * 4)))
        return (pixels, AnimationTiming.playedMilliseconds(duration))
    }
}
