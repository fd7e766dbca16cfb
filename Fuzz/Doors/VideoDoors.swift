import ThumbImaging

/// Video bytes through the Thumbnailer as the worker decodes them: the bytes behind a
/// descriptor (a memfd) read by FFmpeg through the one AVIO path (`pread`), the demuxer their
/// first bytes choose, the poster search and the preview's seeks. A container door takes every
/// codec of the allow-list; a codec door allows one codec only, so its mutations reach that
/// decoder and no other (its seeds are clips of that codec).
enum VideoDoors {
    /// Limits far below the defaults, so a forged header is refused (the same path) inside the
    /// fuzzer's memory, and a few frames per input keep it quick.
    static func thumbnailer(codecs: Set<VideoCodec>) -> Thumbnailer {
        var limits = ImageLimits()
        limits.maxPixels = 4_000_000
        limits.maxAnimationFrames = 4
        limits.maxAnimationPixels = 4_000_000
        limits.video.codecs = codecs
        limits.video.maxBytesRead = 4 << 20
        limits.video.maxPackets = 256
        limits.video.previewFrames = 3
        return Thumbnailer(limits: limits, decodesSandboxOnlyFormats: true)
    }

    /// The poster for two kinds (a fill with a circle, a fit), then the animated preview.
    static func poster(of bytes: [UInt8], container: SourceFormat? = nil, codecs: Set<VideoCodec> = Set(VideoCodec.allCases)) {
        let source = SourceBytes(bytes)
        guard let format = source.format, format.row.media == .video, container == nil || format == container else { return }
        let thumbnailer = thumbnailer(codecs: codecs)
        _ = try? thumbnailer.thumbnails(of: source, requests: [ImageDoors.requests[0], ImageDoors.requests[2]])
        _ = try? thumbnailer.thumbnails(of: source, requests: [ImageDoors.animatedRequest])
    }
}
