import CWebP

/// WebP through libwebp: the header (`WebPGetFeatures`) and the container (libwebpdemux: ICC,
/// EXIF, an animation's first frame) are read by `init`, before any pixel buffer exists; `load`
/// decodes incrementally (a slice of input at a time, asking `isCancelled` between slices) and
/// scales on load with libwebp's own area-averaging rescaler (`use_scaling`), so the full-size
/// image of a lossy file never exists in memory.
final class WebPLoader: FrameLoader {
    let storedWidth: Int
    let storedHeight: Int
    let orientation: Orientation

    /// The bitstream `load` decodes: a still's whole file, or an animation's first frame (its
    /// ALPH/VP8/VP8L chunks, which libwebp's decoder takes as they are).
    let bitstream: Range<Int>
    /// Where that bitstream's pixels go on the canvas: all of it for a still, the first frame's
    /// rectangle for an animation (the rest of the canvas is transparent, as a browser shows it).
    let frameRect: FrameRect
    /// Whether the output carries alpha: the bitstream's, or the canvas around a smaller first frame.
    let hasAlpha: Bool
    let isAnimation: Bool
    /// The `ICCP` chunk: the colour space of the pixels (nil when absent: sRGB).
    let iccProfile: [UInt8]?
    /// Something the container parse had to skip, one line (joined to a decode warning).
    let containerWarning: String?

    let source: SourceBytes

    /// Input bytes given to libwebp per `WebPIUpdate`, with a cancellation check between two.
    /// A 4000×3000 photo at q80 (~1.4 MB) decodes ~60 ms on this machine: ~1.5 ms a slice of
    /// 32 KB (see `WebPTests` for the count). A lossless file that compresses far better (a flat
    /// graphic) decodes more rows a slice; the worker's render deadline bounds that case.
    static let sliceBytes = 32 << 10

    struct FrameRect: Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        self.source = source
        let file = UnsafeRawBufferPointer(start: source.pointer, count: source.count)
        let features = try Self.features(of: file, what: "WebP header")
        let width = Int(features.width), height = Int(features.height)
        // For an animation these are the canvas's (VP8X): every frame lies within it.
        try limits.check(width: width, height: height)
        storedWidth = width
        storedHeight = height

        let container = try Container(file: file, isAnimation: features.has_animation != 0,
                                      canvasWidth: width, canvasHeight: height)
        iccProfile = container.iccProfile
        orientation = container.orientation ?? .up
        containerWarning = container.warning
        isAnimation = features.has_animation != 0

        let frameFeatures: WebPBitstreamFeatures
        if let frame = container.firstFrame {
            bitstream = frame.bytes
            frameRect = frame.rect
            frameFeatures = try Self.features(of: UnsafeRawBufferPointer(rebasing: file[frame.bytes]),
                                              what: "the animation's first frame")
            guard Int(frameFeatures.width) == frame.rect.width, Int(frameFeatures.height) == frame.rect.height else {
                throw .undecodable(reason: "the animation's first frame declares \(frame.rect.width)x\(frame.rect.height) "
                                   + "but its bitstream is \(frameFeatures.width)x\(frameFeatures.height)")
            }
            hasAlpha = frameFeatures.has_alpha != 0 || frame.rect != FrameRect(x: 0, y: 0, width: width, height: height)
        } else {
            bitstream = 0..<source.count
            frameRect = FrameRect(x: 0, y: 0, width: width, height: height)
            frameFeatures = features
            hasAlpha = features.has_alpha != 0
        }
        // A lossless bitstream is decoded whole as 32-bit ARGB inside libwebp, scaled or not
        // (its backward references reach any earlier pixel): that is the decoder's working memory.
        if frameFeatures.format == 2 {
            // Within Int: limits.check bounded both sides (or the demuxer bounded the frame by them).
            let bytes = frameRect.width * frameRect.height * 4
            if bytes > limits.maxDecoderMemoryBytes {
                throw .tooLarge(reason: "a \(frameRect.width)x\(frameRect.height) lossless WebP needs \(bytes) bytes of "
                                + "decoder memory, over the \(limits.maxDecoderMemoryBytes)-byte limit")
            }
        }
    }

    /// libwebp's header parse; a failure names its VP8StatusCode.
    static func features(of bytes: UnsafeRawBufferPointer, what: String) throws(ImagingError) -> WebPBitstreamFeatures {
        var features = WebPBitstreamFeatures()
        let status = WebPGetFeatures(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
        guard status == VP8_STATUS_OK else {
            throw .undecodable(reason: "\(what): libwebp says \(WebPStatus.describe(status))")
        }
        guard features.width > 0, features.height > 0 else {
            throw .undecodable(reason: "\(what) declares \(features.width)x\(features.height) pixels")
        }
        return features
    }

    /// Size of the frame `load(maxShrink:)` decodes: the least reduction on each axis that keeps
    /// at least `stored / maxShrink` pixels, no scaling when both axes would stay as they are, and
    /// none for an animation whose first frame does not cover the canvas. A side is never scaled
    /// below 100 px by this rule, so that rounding up keeps the aspect ratio within 1%.
    func loadedSize(maxShrink: Double) -> (width: Int, height: Int) {
        let full = (width: storedWidth, height: storedHeight)
        guard maxShrink.isFinite, maxShrink > 1,
              frameRect == FrameRect(x: 0, y: 0, width: storedWidth, height: storedHeight) else { return full }
        let shortSide = Double(min(storedWidth, storedHeight))
        let shrink = min(maxShrink, max(1, shortSide / Self.minimumScaledSidePixels))
        let width = CheckedConversion.clampedInteger(Double(storedWidth) / shrink, rounding: .up, to: 1...storedWidth)
        let height = CheckedConversion.clampedInteger(Double(storedHeight) / shrink, rounding: .up, to: 1...storedHeight)
        return (width, height)
    }

    /// Rounding a side up adds less than one pixel: below 100 px that could move the aspect ratio by 1%.
    static let minimumScaledSidePixels = 100.0

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        let size = loadedSize(maxShrink: maxShrink)
        var frame = try decode(width: size.width, height: size.height, isCancelled: isCancelled)
        frame.iccProfile = iccProfile
        let warnings = [containerWarning, frame.warning].compactMap { $0 }
        frame.warning = warnings.isEmpty ? nil : warnings.joined(separator: "; ")
        return frame
    }
}
