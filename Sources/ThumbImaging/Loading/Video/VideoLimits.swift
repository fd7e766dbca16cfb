/// The codecs a video may be decoded with (`formats.video.codecs`): what phones, cameras and
/// the web write. Anything else FFmpeg might decode (a hundred codecs, most rarely used and
/// rarely fuzzed) is refused before a decoder is opened.
package enum VideoCodec: String, Sendable, CaseIterable, Comparable {
    case h264, hevc, vp8, vp9, av1, mpeg4, mjpeg

    /// The bit of `VideoLimits.codecs` on the worker protocol: stable, never reused.
    package var wireBit: UInt32 {
        switch self {
        case .h264: 1 << 0
        case .hevc: 1 << 1
        case .vp8: 1 << 2
        case .vp9: 1 << 3
        case .av1: 1 << 4
        case .mpeg4: 1 << 5
        case .mjpeg: 1 << 6
        }
    }

    /// As people name it.
    var displayName: String {
        switch self {
        case .h264: "H.264"
        case .hevc: "HEVC"
        case .vp8: "VP8"
        case .vp9: "VP9"
        case .av1: "AV1"
        case .mpeg4: "MPEG-4 Part 2"
        case .mjpeg: "Motion JPEG"
        }
    }

    package static func < (lhs: VideoCodec, rhs: VideoCodec) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// What one video's poster or preview may cost: checked from the container's header before
/// any frame is decoded, and while packets are read.
package struct VideoLimits: Sendable, Equatable {
    /// The codecs allowed (`formats.video.codecs`).
    package var codecs: Set<VideoCodec> = Set(VideoCodec.allCases)
    /// Most bytes of the file read to find the poster (or the preview's frames), headers
    /// included: a clip whose keyframes are far apart, or whose index is at the end of a huge
    /// file, costs at most this much reading.
    package var maxBytesRead: Int = 64 << 20
    /// Most packets demuxed to find the poster (or the preview's frames).
    package var maxPackets: Int = 4096
    /// Frames of a `keep` kind's preview (an animated WebP sampled over the clip), at most
    /// `maxAnimationFrames` and as the animation pixel limit allows.
    package var previewFrames: Int = 24

    package init() {}

    /// The configuration keys that bound a video's decode (`SourceFormatRow.limitKeys`).
    static let keys = ["maxPixels", "maxDimension", "maxAnimationFrames", "maxAnimationPixels", "formats.video.codecs",
                       "formats.video.maxBytesRead", "formats.video.maxPackets", "formats.video.previewFrames"]

    /// The allow-list as the worker protocol carries it.
    package var codecBits: UInt32 { codecs.reduce(0) { $0 | $1.wireBit } }

    package static func codecs(fromBits bits: UInt32) -> Set<VideoCodec> {
        Set(VideoCodec.allCases.filter { bits & $0.wireBit != 0 })
    }
}
