import CFFmpeg

/// A clip as the short animated preview video sites play on hover: `count` frames sampled
/// evenly over its length (the middle of each of `count` equal spans), in order, each shown
/// for its span's share of the clip (10 fps at most, 2 at least). A clip longer than the
/// limits allow is sampled more sparsely, never refused: `count` is the configured number
/// (`formats.video.previewFrames`) held to `maxAnimationFrames`, `maxAnimationPixels` and the
/// clip's own frame count.
///
/// Each frame is read by seeking to the keyframe before its time and decoding up to it (or
/// taking the keyframe when it is close enough), within the same byte and packet budgets as
/// a poster; a budget that runs out ends the preview early, with a warning.
final class VideoPreview: AnimationFrames {
    private let file: VideoFile
    private let times: [Double]
    private let spacing: Double
    private let orientation: Orientation
    private var nextIndex = 0
    private var lastSeconds = -Double.infinity
    private var maxShrink = 1.0
    /// The converted size of the first frame, which every later one is given.
    private var frameSize: (width: Int, height: Int)?
    private let limits: ImageLimits
    private let isCancelled: CancellationCheck?
    let canvasWidth: Int
    let canvasHeight: Int
    var frameCount: Int { times.count }
    let loopCount = 0
    private(set) var warning: String?

    /// nil with the reason when the clip makes no preview (no length known, a single frame):
    /// its kind then gets the still poster.
    static func open(_ source: SourceBytes, format: SourceFormat, limits: ImageLimits,
                     isCancelled: CancellationCheck?) throws(ImagingError) -> (VideoPreview?, String?) {
        let file = try VideoFile(source, format: format, limits: limits)
        try VideoLoader.checkHeader(file, limits: limits)
        try file.openDecoder()
        let parameters = file.stream.parameters
        let (width, height) = (Int(parameters.width), Int(parameters.height))
        guard let duration = file.durationSeconds, width > 0, height > 0 else {
            return (nil, "\(format.name): the clip's length or frame size is not in its header: the poster is shown as a still")
        }
        let canvasPixels = width * height
        var count = min(limits.video.previewFrames, limits.maxAnimationFrames, limits.maxAnimationPixels / max(1, canvasPixels))
        let stated = Int(file.stream.pointee.nb_frames)
        if stated > 0 { count = min(count, stated) }
        guard count >= 2 else {
            return (nil, "\(format.name): a preview of \(width)x\(height) frames fits \(max(0, count)) frame(s) within the animation limits: "
                    + "the poster is shown as a still")
        }
        let shown = file.orientation.displayedSize(width: width, height: height)
        let preview = VideoPreview(file: file, duration: duration, count: count, canvasWidth: shown.width, canvasHeight: shown.height,
                                   limits: limits, isCancelled: isCancelled)
        return (preview, nil)
    }

    private init(file: VideoFile, duration: Double, count: Int, canvasWidth: Int, canvasHeight: Int, limits: ImageLimits,
                 isCancelled: CancellationCheck?) {
        self.limits = limits
        self.file = file
        spacing = duration / Double(count)
        times = (0..<count).map { (Double($0) + 0.5) * duration / Double(count) }
        orientation = file.orientation
        self.canvasWidth = canvasWidth
        self.canvasHeight = canvasHeight
        self.isCancelled = isCancelled
    }

    func reduce(toAtMost maxShrink: Double) {
        self.maxShrink = maxShrink.isFinite ? max(1, maxShrink) : 1
    }

    /// Milliseconds each frame shows: its span of the clip, within 100–500 ms.
    var frameMilliseconds: Int { Int(min(500, max(100, (spacing * 1000).rounded()))) }

    func next(isCancelled: CancellationCheck?) throws(ImagingError) -> (pixels: PixelBuffer, durationMilliseconds: Int)? {
        while nextIndex < times.count {
            let target = times[nextIndex]
            nextIndex += 1
            guard let frame = try frame(at: target, isCancelled: isCancelled) else {
                if nextIndex > 1 {
                    warning = "the preview ends after \(nextIndex - 1) of \(times.count) frames"
                        + (file.stoppedBy.map { " (\($0))" } ?? "")
                }
                nextIndex = times.count
                break
            }
            // A frame's own size (its sample aspect ratio) is held to the limits as a poster's is.
            try limits.check(width: frame.width, height: frame.height)
            let size = frameSize ?? VideoFrame.reduced(frame.width, frame.height, by: maxShrink)
            frameSize = size
            let loaded = try frame.pixels(maxShrink: maxShrink, stream: file.stream, isCancelled: isCancelled, size: size)
            var pixels = loaded.pixels
            // The render loop takes a preview's frames as sRGB (`PixelFrameLoader`).
            if let profile = loaded.iccProfile, let transform = try ColorProfileTransform.shared(profile, layout: .rgb, isCancelled: isCancelled) {
                transform.apply(to: &pixels)
            }
            return (orientation.apply(to: pixels), frameMilliseconds)
        }
        return nil
    }

    /// The frame showing at `seconds` (the first at or after it, less half a frame's time),
    /// decoded in order from where the last one was, or from the keyframe before it when that is
    /// further on.
    private func frame(at seconds: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> VideoFrame? {
        let earliest = seconds - file.halfFrameSeconds
        // Seek only forward past a gap: backwards would decode the same frames twice.
        if seconds - max(lastSeconds, 0) > 2 || lastSeconds == -.infinity {
            file.seek(toSeconds: seconds)
        }
        // Before the clip's first keyframe a decoder shows concealment, not the picture.
        var sawKeyframe = lastSeconds > -.infinity
        while let decoded = try file.nextFrame(keyframesOnly: false, isCancelled: isCancelled) {
            if decoded.pointee.key_frame != 0 { sawKeyframe = true }
            guard sawKeyframe, !VideoFrame.isDamaged(decoded) else { continue }
            let at = file.seconds(decoded.pointee.best_effort_timestamp) ?? seconds
            guard at >= earliest, at > lastSeconds else { continue }
            lastSeconds = at
            return try VideoFrame(referencing: decoded, file: file)
        }
        return nil
    }
}
