#if canImport(Glibc)
import Glibc
#endif
import CFFmpeg
import CThumbVideo

/// One video opened for its frames: FFmpeg's demuxer over positioned reads of the file (the
/// C side, `CThumb_VideoOpen`: no other input is ever opened), its best video stream, and that
/// stream's decoder, single-threaded and held to the pixel limit. Every step is bounded:
/// `VideoLimits.maxBytesRead` bytes and `maxPackets` packets in all, across seeks.
///
/// Used once, on one thread; closes everything at deinit.
final class VideoFile {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let input: OpaquePointer?
    let stream: UnsafeMutablePointer<AVStream>
    let codec: VideoCodec
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The frame the last `nextFrame` returned (valid until the next call).
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let limits: ImageLimits
    /// The descriptor read, when this file made one (a memfd for bytes held in memory).
    private let ownDescriptor: Int32?
    /// Keeps a file-backed source's descriptor open while FFmpeg reads it.
    private let source: SourceBytes
    let formatName: String

    private(set) var packetsRead = 0
    private var draining = false
    /// Why reading stopped early (a budget), for the warning of a poster found without it.
    private(set) var stoppedBy: String?

    init(_ source: SourceBytes, format: SourceFormat, limits: ImageLimits) throws(ImagingError) {
        self.source = source
        self.limits = limits
        formatName = format.name
        if let missing = VideoLibraries.load() {
            throw .unsupportedFormat(reason: "\(format.name) videos cannot be decoded by this installation: \(missing)")
        }
        CThumb_VideoCaptureLog()
        guard source.count > 0 else { throw .undecodable(reason: "\(format.name): the file is empty") }
        let descriptor: Int32
        if let window = source.file {
            descriptor = window.descriptor
            ownDescriptor = nil
        } else {
            descriptor = try Self.memoryFile(source)
            ownDescriptor = descriptor
        }
        var opened: UnsafeMutablePointer<AVFormatContext>?
        var input: OpaquePointer?
        var message = [CChar](repeating: 0, count: 256)
        let status = CThumb_VideoOpen(descriptor, Int64(source.count), Int64(limits.video.maxBytesRead), format.demuxer,
                                      &opened, &input, &message, message.count)
        guard status >= 0, let opened else {
            if let own = ownDescriptor { close(own) }
            throw .undecodable(reason: "\(format.name): " + Self.describe(status, said: Self.text(message)))
        }
        context = opened
        self.input = input
        do throws(ImagingError) {
            (stream, codec) = try Self.videoStream(opened, format: format, allowed: limits.video.codecs)
        } catch {
            CThumb_VideoClose(opened, input)
            context = nil
            if let own = ownDescriptor { close(own) }
            throw error
        }
    }

    deinit {
        ff.avcodec_free_context!(&decoder)
        ff.av_packet_free!(&packet)
        ff.av_frame_free!(&frame)
        CThumb_VideoClose(context, input)
        if let own = ownDescriptor { close(own) }
    }

    /// Bytes in memory (a test's, a fuzz door's) behind a descriptor, so they go through the
    /// one reading path (pread) the worker's files take.
    private static func memoryFile(_ source: SourceBytes) throws(ImagingError) -> Int32 {
        let descriptor = CThumb_VideoMemoryFile()
        guard descriptor >= 0 else { throw .undecodable(reason: "cannot hold the video in memory (memfd_create errno \(errno))") }
        var written = 0
        let failed: Bool = source.withUnsafeBytes { bytes in
            while written < bytes.count {
                let got = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { return true }
                written += got
            }
            return false
        }
        if failed {
            close(descriptor)
            throw .undecodable(reason: "cannot hold the video in memory (write errno \(errno))")
        }
        return descriptor
    }

    /// The stream a poster comes from (FFmpeg's best video stream; a cover picture attached to
    /// an audio file is no video), checked against the codec allow-list and the pixel limits
    /// from the container's header, before any decoder exists.
    private static func videoStream(_ context: UnsafeMutablePointer<AVFormatContext>, format: SourceFormat,
                                    allowed: Set<VideoCodec>) throws(ImagingError) -> (UnsafeMutablePointer<AVStream>, VideoCodec) {
        let count = Int(context.pointee.nb_streams)
        var chosen: UnsafeMutablePointer<AVStream>?
        var best = -1
        for index in 0..<count {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar?.pointee else { continue }
            guard parameters.codec_type == AVMEDIA_TYPE_VIDEO,
                  stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0 else { continue }
            // The default stream first, then the largest picture (av_find_best_stream's rule,
            // without its decoder probing).
            let area = Int(max(0, parameters.width)) * Int(max(0, parameters.height))
            let rank = (stream.pointee.disposition & AV_DISPOSITION_DEFAULT != 0 ? 1 << 40 : 0) + area
            if rank > best { (chosen, best) = (stream, rank) }
        }
        guard let stream = chosen else {
            let audio = (0..<count).contains { context.pointee.streams[$0]?.pointee.codecpar?.pointee.codec_type == AVMEDIA_TYPE_AUDIO }
            throw .unsupportedFormat(reason: "\(format.name) has no video stream" + (audio ? " (audio only)" : ""))
        }
        let parameters = stream.parameters
        guard let codec = VideoCodec(parameters.codec_id) else {
            let name = parameters.codec_id == AV_CODEC_ID_NONE ? "a codec FFmpeg does not know" : (ff.avcodec_get_name!(parameters.codec_id).map { String(cString: $0) } ?? "unknown")
            throw .unsupportedFormat(reason: "\(format.name) video in an unsupported codec (\(name)); "
                                     + "formats.video.codecs may list \(VideoCodec.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard allowed.contains(codec) else {
            throw .unsupportedFormat(reason: "\(format.name) video in \(codec.displayName), which formats.video.codecs does not allow")
        }
        return (stream, codec)
    }

    /// Opens the stream's decoder: one thread (the worker's budget is one core), frames over
    /// `maxPixels` refused by the decoder itself (`max_pixels`) whatever the header said.
    func openDecoder() throws(ImagingError) {
        guard decoder == nil else { return }
        guard let parameters = stream.pointee.codecpar else {
            throw .undecodable(reason: "\(formatName): the video stream has no codec parameters")
        }
        guard let implementation = ff.avcodec_find_decoder!(parameters.pointee.codec_id) else {
            throw .unsupportedFormat(reason: "\(formatName): this FFmpeg has no \(codec.displayName) decoder")
        }
        guard let made = ff.avcodec_alloc_context3!(implementation), let packet = ff.av_packet_alloc!(), let frame = ff.av_frame_alloc!() else {
            throw .tooLarge(reason: "out of memory opening the \(codec.displayName) decoder")
        }
        decoder = made
        self.packet = packet
        self.frame = frame
        guard ff.avcodec_parameters_to_context!(made, parameters) >= 0 else {
            throw .undecodable(reason: "\(formatName): the stream's \(codec.displayName) parameters are invalid")
        }
        made.pointee.thread_count = 1
        made.pointee.max_pixels = Int64(limits.maxPixels)
        made.pointee.pkt_timebase = stream.pointee.time_base
        let status = ff.avcodec_open2!(made, implementation, nil)
        guard status >= 0 else {
            throw .undecodable(reason: "\(formatName): cannot open the \(codec.displayName) decoder: " + Self.describe(status, said: Self.lastLogLine()))
        }
    }

    /// Seconds from the stream's start to its end, when the container says.
    var durationSeconds: Double? {
        let stream = self.stream.pointee
        if stream.duration > 0, stream.time_base.num > 0, stream.time_base.den > 0 {
            return Double(stream.duration) * Double(stream.time_base.num) / Double(stream.time_base.den)
        }
        guard let context, context.pointee.duration > 0 else { return nil }
        return Double(context.pointee.duration) / Double(AV_TIME_BASE)
    }

    /// Half the time one frame shows (from the stream's average frame rate; 20 ms when unsaid),
    /// within 1–100 ms: how early a frame may start and still be "the frame at" a time.
    var halfFrameSeconds: Double {
        let rate = stream.pointee.avg_frame_rate
        guard rate.num > 0, rate.den > 0 else { return 0.02 }
        return min(0.1, max(0.001, 0.5 * Double(rate.den) / Double(rate.num)))
    }

    /// Seconds of a timestamp of the stream, from its start.
    func seconds(_ timestamp: Int64) -> Double? {
        let base = stream.pointee.time_base
        guard timestamp != Int64.min, base.num > 0, base.den > 0 else { return nil }
        let start = stream.pointee.start_time == Int64.min ? 0 : stream.pointee.start_time
        let (offset, overflow) = timestamp.subtractingReportingOverflow(start)
        guard !overflow else { return nil }
        return Double(offset) * Double(base.num) / Double(base.den)
    }

    /// Moves to the last keyframe at or before `seconds` from the start (the start itself when
    /// the container cannot seek there) and forgets what the decoder held.
    func seek(toSeconds seconds: Double) {
        guard let context, let decoder else { return }
        let base = stream.pointee.time_base
        let start = stream.pointee.start_time == Int64.min ? 0 : stream.pointee.start_time
        var target = start
        if base.num > 0, base.den > 0, seconds.isFinite, seconds > 0 {
            let ticks = seconds * Double(base.den) / Double(base.num)
            if ticks < 1e15 { target = start &+ Int64(ticks) }
        }
        if ff.av_seek_frame!(context, stream.pointee.index, target, AVSEEK_FLAG_BACKWARD) < 0 {
            _ = ff.av_seek_frame!(context, stream.pointee.index, start, AVSEEK_FLAG_BACKWARD)
        }
        ff.avcodec_flush_buffers!(decoder)
        draining = false
    }

    /// The next decoded frame (keyframes only, when asked: the decoder skips the rest), nil at
    /// the end of the stream or of a budget (`stoppedBy` says which). The frame is valid until
    /// the next call.
    func nextFrame(keyframesOnly: Bool, stopAfterSeconds: Double? = nil,
                   isCancelled: CancellationCheck?) throws(ImagingError) -> UnsafeMutablePointer<AVFrame>? {
        guard let context, let decoder, let packet, let frame else { return nil }
        decoder.pointee.skip_frame = keyframesOnly ? AVDISCARD_NONKEY : AVDISCARD_DEFAULT
        while true {
            let received = ff.avcodec_receive_frame!(decoder, frame)
            if received >= 0 { return frame }
            if received == CThumb_AVErrorEOF() { return nil }
            guard received == CThumb_AVErrorAgain() else {
                throw .undecodable(reason: "\(formatName) \(codec.displayName): " + Self.describe(received, said: Self.lastLogLine()))
            }
            if draining { return nil }
            if isCancelled?() == true { throw .cancelled }
            // The next packet of the stream, within the budgets; at the end, drain the decoder.
            var sent = false
            while !sent {
                guard packetsRead < limits.video.maxPackets else {
                    stoppedBy = "stopped after \(packetsRead) packets (formats.video.maxPackets)"
                    return nil
                }
                let status = ff.av_read_frame!(context, packet)
                if status < 0 {
                    if let input, CThumb_VideoReadBudgetSpent(input) != 0 {
                        stoppedBy = "stopped after reading \(CThumb_VideoBytesRead(input)) bytes (formats.video.maxBytesRead)"
                    }
                    draining = true
                    _ = ff.avcodec_send_packet!(decoder, nil)
                    break
                }
                defer { ff.av_packet_unref!(packet) }
                packetsRead += 1
                guard packet.pointee.stream_index == stream.pointee.index else { continue }
                if let stop = stopAfterSeconds, let at = seconds(packet.pointee.pts), at > stop {
                    stoppedBy = "stopped past \(Int(stop)) s"
                    return nil
                }
                let status2 = ff.avcodec_send_packet!(decoder, packet)
                // A damaged packet: the decoder conceals it or drops it, as players do.
                if status2 < 0 && status2 != CThumb_AVErrorAgain() { continue }
                sent = true
            }
        }
    }

    /// The sample aspect ratio of `frame` as the container or the codec says (nil: square).
    func sampleAspectRatio(of frame: UnsafeMutablePointer<AVFrame>) -> (num: Int, den: Int)? {
        guard let context else { return nil }
        let ratio = ff.av_guess_sample_aspect_ratio!(context, stream, frame)
        guard ratio.num > 0, ratio.den > 0, ratio.num != ratio.den else { return nil }
        return (Int(ratio.num), Int(ratio.den))
    }

    /// The stream's display matrix as an EXIF orientation (`VideoOrientation`).
    var orientation: Orientation {
        var size = 0
        guard let data = ff.av_stream_get_side_data!(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 9 * 4 else { return .up }
        let matrix = UnsafeRawPointer(data).bindMemory(to: Int32.self, capacity: 9)
        return VideoOrientation.orientation(matrix: (0..<9).map { matrix[$0] }, rotationDegrees: ff.av_display_rotation_get!(matrix))
    }

    static func lastLogLine() -> String {
        var line = [CChar](repeating: 0, count: 256)
        CThumb_VideoTakeLastLogLine(&line, line.count)
        return text(line)
    }

    /// A NUL-terminated C string filled in by FFmpeg, as text (invalid UTF-8 repaired).
    static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An FFmpeg status, with the line FFmpeg logged about it when there is one.
    static func describe(_ status: Int32, said: String) -> String {
        var text = [CChar](repeating: 0, count: 128)
        _ = ff.av_strerror!(status, &text, text.count)
        let error = Self.text(text)
        let line = said.trimmingCharacters(in: " \n")
        return line.isEmpty ? error : "\(line) (\(error))"
    }
}

extension VideoCodec {
    init?(_ id: AVCodecID) {
        switch id {
        case AV_CODEC_ID_H264: self = .h264
        case AV_CODEC_ID_HEVC: self = .hevc
        case AV_CODEC_ID_VP8: self = .vp8
        case AV_CODEC_ID_VP9: self = .vp9
        case AV_CODEC_ID_AV1: self = .av1
        case AV_CODEC_ID_MPEG4: self = .mpeg4
        case AV_CODEC_ID_MJPEG: self = .mjpeg
        default: return nil
        }
    }
}

extension SourceFormat {
    /// FFmpeg's demuxer for a video format.
    var demuxer: String {
        switch self {
        case .matroska: "matroska"
        case .avi: "avi"
        default: "mov"
        }
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

extension UnsafeMutablePointer<AVStream> {
    /// The stream's codec parameters (FFmpeg allocates them with every stream; zeroes, a codec
    /// of none, if it ever did not).
    var parameters: AVCodecParameters { pointee.codecpar?.pointee ?? AVCodecParameters() }
}
