/// The composited frames of an animated source, one at a time: each is the whole canvas as a
/// browser shows it at that moment (RGBA, straight alpha), so the thumbnailer renders it
/// exactly as a still (`PixelFrameLoader` through the one render loop). Opened only after its
/// frames were counted and held to `ImageLimits.checkAnimation`.
protocol AnimationFrames: AnyObject {
    var canvasWidth: Int { get }
    var canvasHeight: Int { get }
    var frameCount: Int { get }
    /// Times the animation plays, 0 = forever (WebP's ANIM loop count).
    var loopCount: Int { get }
    /// The next frame and how long it shows, milliseconds; nil after the last. A frame the
    /// data ends in stops the animation there with `warning` set (browsers show the frames
    /// before it); the first one failing throws.
    func next(isCancelled: CancellationCheck?) throws(ImagingError) -> (pixels: PixelBuffer, durationMilliseconds: Int)?
    var warning: String? { get }
    /// Told, before the first frame, how much the outputs allow each frame to be reduced (a
    /// video's frames are converted that small; composited canvases ignore it).
    func reduce(toAtMost maxShrink: Double)
}

extension AnimationFrames {
    func reduce(toAtMost maxShrink: Double) {}
}

enum AnimationTiming {
    /// A frame delay as browsers play it: Chromium, Firefox and Safari show a delay of 0 or
    /// 10 ms as 100 ms (old GIFs meant "as fast as possible", which would spin a CPU); so do we,
    /// for GIF's and WebP's own durations alike.
    static func playedMilliseconds(_ milliseconds: Int) -> Int {
        milliseconds <= 10 ? 100 : milliseconds
    }
}

/// A frame already in memory, handed to the render loop as a loader's frame would be.
final class PixelFrameLoader: FrameLoader {
    let pixels: PixelBuffer
    var storedWidth: Int { pixels.width }
    var storedHeight: Int { pixels.height }
    var orientation: Orientation

    init(_ pixels: PixelBuffer, orientation: Orientation = .up) {
        self.pixels = pixels
        self.orientation = orientation
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        LoadedFrame(pixels: pixels, iccProfile: nil, warning: nil)
    }
}

extension SourceFormat {
    /// The frames of an animated source for a kind that keeps animation, counted and held to
    /// the limits before any is decoded; nil when the source is a still (one frame, or a
    /// format whose animations are not read: libheif 1.15 reads an AVIF sequence's primary
    /// image only, and JPEG XL's frames after the first are not read yet), or a GIF whose LZW code sizes only the still path reads (`GIFWideCodes`):
    /// then `stillReason` says why it is a still.
    func animationFrames(_ source: SourceBytes, limits: ImageLimits, isCancelled: CancellationCheck?) throws(ImagingError) -> (frames: (any AnimationFrames)?, stillReason: String?) {
        switch self {
        case .gif:
            let scan = try GIFAnimationScan(UnsafeRawBufferPointer(start: source.pointer, count: source.count),
                                            maxStoredFrames: max(2, limits.maxAnimationFrames))
            guard scan.frameCount > 1, let first = scan.frames.first else { return (nil, nil) }
            try limits.checkAnimation("GIF", frames: scan.frameCount, width: max(scan.screenWidth, first.left + first.width),
                                      height: max(scan.screenHeight, first.top + first.height))
            if let wide = scan.frames.firstIndex(where: { !(2...8).contains($0.codeSize) }) {
                return (nil, "GIF frame \(wide + 1) has LZW minimum code size \(scan.frames[wide].codeSize), "
                        + "which only the first-frame reader takes: the first frame is shown as a still")
            }
            return (try GIFAnimation(source: source, scan: scan, limits: limits), nil)
        case .webp:
            return (try WebPAnimation.open(source, limits: limits), nil)
        case .mp4, .matroska, .avi:
            let (preview, stillReason) = try VideoPreview.open(source, format: self, limits: limits, isCancelled: isCancelled)
            return (preview, stillReason)
        // An animated JPEG XL gives its first frame (JXLLoader) as a still, as AVIF sequences do.
        case .jpeg, .png, .heif, .avif, .tiff, .jxl:
            return (nil, nil)
        }
    }
}
