/// A boundary where hostile bytes enter thumbd, as a libFuzzer target (`scripts/fuzz`) feeds it.
///
/// Each door is a few lines over the closest entry point of today's code, so that it is easy to
/// repoint at the typed parsers that replace them. A door returns normally for every input that is
/// refused or accepted; anything else (a trap, a sanitizer report, a hang) is a finding. The
/// regression tests replay stored crash inputs through the very same `run`.
public enum FuzzDoor: String, CaseIterable, Sendable {
    /// A slot name or inline spec (`large@2x`, `48x48@3x,fill,circle`): the `{kind}` of a URL.
    case slotSpec = "slot-spec"
    /// A config file (JSON): kinds, limits, encoding, service settings.
    case kindConfig = "kind-config"
    /// A sequence of HTTP requests (method, path, query, headers) through the API, without a socket.
    case httpRequest = "http-request"
    /// The body of `POST /v1/prefetch`.
    case prefetchBody = "prefetch-body"
    /// The body of `POST /v1/placeholders` (and the same text as the GET form's `assets`).
    case placeholdersBody = "placeholders-body"
    /// The body of `PUT /v1/assets/{path}/focus`.
    case focusBody = "focus-body"
    /// The query of `GET /v1/assets` (`prefix=&after=&limit=`), as the URL's query text.
    case assetList = "asset-list"
    /// The body of `POST /v1/signatures`.
    case signaturesBody = "signatures-body"
    /// A line of a jobs file (or a spool job file).
    case jobLine = "job-line"
    /// The fields of a Redis Streams message, one per line: name, value, name, value…
    case redisFields = "redis-fields"
    /// Source bytes through the Thumbnailer; they differ in their seeds (and max length).
    case jpeg, png, gif
    /// HEIF and AVIF source bytes through the Thumbnailer (libheif, libde265, dav1d).
    case heif
    /// JPEG XL source bytes through the Thumbnailer (libjxl, single-threaded).
    case jxl
    /// WebP source bytes through the same Thumbnailer door (seeds: the corpus's WebP files).
    case webp
    /// TIFF source bytes through the same door (libtiff; seeds: the corpus's formats-next/tiff files).
    case tiff
    /// A progressive JPEG's scan selection at 1/8 (`CThumb_JPEGKeepScans`), checked against the whole decode.
    case jpegDCScans = "jpeg-dc-scans"
    /// Video bytes of one container (MP4/MOV, Matroska/WebM, AVI) through the Thumbnailer: FFmpeg's
    /// demuxer over the AVIO path, every allowed codec, the poster and the preview (`VideoDoors`).
    case videoMP4 = "video-mp4", videoMatroska = "video-matroska", videoAVI = "video-avi"
    /// Video bytes of any container with one codec allowed: that codec family's decoder only.
    case videoH264 = "video-h264", videoHEVC = "video-hevc", videoVP8 = "video-vp8", videoVP9 = "video-vp9", videoAV1 = "video-av1"
    case videoMPEG4 = "video-mpeg4", videoMJPEG = "video-mjpeg"
    /// A render worker's answer frame, as the daemon decodes it (`WorkerAnswer.decode`).
    case workerAnswer = "worker-answer"
    /// A render order frame, as the worker decodes it (`WorkerRenderOrder.decode`).
    case workerRender = "worker-render"

    /// Feeds one input to the door.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .slotSpec: TextDoors.slotSpec(FuzzText.string(bytes))
        case .kindConfig: TextDoors.kindConfig(bytes)
        case .httpRequest: HTTPDoors.requests(FuzzText.string(bytes))
        case .prefetchBody: HTTPDoors.prefetch(body: bytes)
        case .placeholdersBody: HTTPDoors.placeholders(body: bytes)
        case .focusBody: HTTPDoors.focus(body: bytes)
        case .assetList: HTTPDoors.assetList(query: FuzzText.string(bytes))
        case .signaturesBody: HTTPDoors.signatures(body: bytes)
        case .jobLine: TextDoors.jobLine(bytes)
        case .redisFields: TextDoors.redisFields(FuzzText.string(bytes))
        case .jpeg, .png, .gif, .heif, .jxl, .webp, .tiff: ImageDoors.thumbnails(of: bytes)
        case .jpegDCScans: JPEGScanDoors.dcScans(bytes)
        case .videoMP4: VideoDoors.poster(of: bytes, container: .mp4)
        case .videoMatroska: VideoDoors.poster(of: bytes, container: .matroska)
        case .videoAVI: VideoDoors.poster(of: bytes, container: .avi)
        case .videoH264: VideoDoors.poster(of: bytes, codecs: [.h264])
        case .videoHEVC: VideoDoors.poster(of: bytes, codecs: [.hevc])
        case .videoVP8: VideoDoors.poster(of: bytes, codecs: [.vp8])
        case .videoVP9: VideoDoors.poster(of: bytes, codecs: [.vp9])
        case .videoAV1: VideoDoors.poster(of: bytes, codecs: [.av1])
        case .videoMPEG4: VideoDoors.poster(of: bytes, codecs: [.mpeg4])
        case .videoMJPEG: VideoDoors.poster(of: bytes, codecs: [.mjpeg])
        case .workerAnswer: WorkerDoors.answer(bytes)
        case .workerRender: WorkerDoors.render(bytes)
        }
    }

    /// libFuzzer's callback, shared by every target's `LLVMFuzzerTestOneInput`.
    public func run(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }
}

enum FuzzText {
    /// Input bytes as the server's text: invalid UTF-8 becomes U+FFFD, as with `String(cString:)`.
    static func string(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
