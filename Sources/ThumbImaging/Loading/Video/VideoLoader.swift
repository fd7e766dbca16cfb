import CFFmpeg

/// A video's poster frame through the one loader interface: the container's header checked
/// against the limits and the codec allow-list before any decode, then a frame people would
/// choose (`PosterSearch`): near 10% of the clip, keyframes alone first (one decode each), and
/// frames in between only when every keyframe tried is black, blank or faded. The frame is then
/// a still like any other: swscale gives it at the plan's least resolution, the render loop does
/// the rest (orientation from the display matrix, crops, masks).
final class VideoLoader: FrameLoader {
    private let file: VideoFile
    private let poster: VideoFrame
    let orientation: Orientation
    private let warning: String?

    var storedWidth: Int { poster.width }
    var storedHeight: Int { poster.height }
    /// When in the clip the poster is, seconds from its start (nil when the frame has no time).
    var posterSeconds: Double? { poster.seconds }

    init(source: SourceBytes, format: SourceFormat, limits: ImageLimits, isCancelled: CancellationCheck?) throws(ImagingError) {
        file = try VideoFile(source, format: format, limits: limits)
        try Self.checkHeader(file, limits: limits)
        try file.openDecoder()
        orientation = file.orientation
        let parameters = file.stream.parameters
        let search = PosterSearch(durationSeconds: file.durationSeconds,
                                  framePixels: Int(max(1, parameters.width)) * Int(max(1, parameters.height)))
        (poster, warning) = try Self.findPoster(file, search: search, isCancelled: isCancelled)
        try limits.check(width: poster.width, height: poster.height)
    }

    /// The frame size the container's header states, held to the limits before a decoder is
    /// opened (a header may also say nothing: then the decoder's `max_pixels` holds).
    static func checkHeader(_ file: VideoFile, limits: ImageLimits) throws(ImagingError) {
        let parameters = file.stream.parameters
        let (width, height) = (Int(parameters.width), Int(parameters.height))
        guard width > 0 || height > 0 else { return }
        do throws(ImagingError) {
            try limits.check(width: max(1, width), height: max(1, height))
        } catch {
            guard case .tooLarge(let reason) = error else { throw error }
            throw .tooLarge(reason: "\(file.formatName) video frames of \(reason)")
        }
    }

    static func findPoster(_ file: VideoFile, search: PosterSearch,
                           isCancelled: CancellationCheck?) throws(ImagingError) -> (VideoFrame, String?) {
        var best: (frame: VideoFrame, score: Double)?
        func consider(_ decoded: UnsafeMutablePointer<AVFrame>) throws(ImagingError) -> VideoFrame? {
            let statistics = VideoFrame.statistics(decoded)
            if statistics?.isPicture ?? true { return try VideoFrame(referencing: decoded, file: file) }
            if let statistics, statistics.score > best?.score ?? -1 {
                best = (try VideoFrame(referencing: decoded, file: file), statistics.score)
            }
            return nil
        }
        if search.targetSeconds > 0 { file.seek(toSeconds: search.targetSeconds) }
        var tried = 0
        while tried < search.keyframeCandidates,
              let decoded = try file.nextFrame(keyframesOnly: true, stopAfterSeconds: search.targetSeconds + search.keyframeWindowSeconds,
                                               isCancelled: isCancelled) {
            guard !VideoFrame.isDamaged(decoded) else { continue }
            tried += 1
            if let picture = try consider(decoded) { return (picture, nil) }
        }
        // Every keyframe tried is dark or blank (a fade-in, a black intro, a clip of one
        // keyframe): the frames in between, in order, from the target's keyframe.
        file.seek(toSeconds: search.targetSeconds)
        var decodedCount = 0
        var sawKeyframe = false
        while decodedCount < search.maxSequentialFrames,
              let decoded = try file.nextFrame(keyframesOnly: false, isCancelled: isCancelled) {
            decodedCount += 1
            if decoded.pointee.key_frame != 0 { sawKeyframe = true }
            // Before the first keyframe a decoder shows concealment, not the picture.
            guard sawKeyframe, !VideoFrame.isDamaged(decoded) else { continue }
            if let picture = try consider(decoded) { return (picture, nil) }
        }
        if let best { return (best.frame, nil) }
        throw .undecodable(reason: "\(file.formatName) \(file.codec.displayName): no frame of the clip decodes"
                           + (file.stoppedBy.map { " (\($0))" } ?? ""))
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        var loaded = try poster.pixels(maxShrink: maxShrink, stream: file.stream, isCancelled: isCancelled)
        loaded.warning = warning
        return loaded
    }
}
