import ThumbImaging
import ThumbSystem

// The imaging values of a render order, field by field. Numbers travel whole (bit patterns for
// doubles): the worker must render exactly what the daemon would have rendered in process, and
// every value that decoding accepts is one `Thumbnailer` already handles without trapping. Enums
// travel as tags that must name a case. `WorkerProtocolTests` counts each type's stored
// properties, so a field added to one of them fails a test until it is carried here.

extension FrameWriter {
    mutating func fileStatus(_ status: FileStatus) {
        int(status.size)
        uint64(UInt64(bitPattern: status.modifiedNanoseconds))
        uint64(status.inode)
        uint64(status.device)
    }

    mutating func limits(_ limits: ImageLimits) {
        int(limits.maxPixels)
        int(limits.maxDimension)
        int(limits.maxFileBytes)
        int(limits.maxProgressiveScans)
        int(limits.maxDecoderMemoryBytes)
        int(limits.maxOutputPixels)
        int(limits.maxAnimationFrames)
        int(limits.maxAnimationPixels)
        videoLimits(limits.video)
    }

    mutating func videoLimits(_ video: VideoLimits) {
        uint64(UInt64(video.codecBits))
        int(video.maxBytesRead)
        int(video.maxPackets)
        int(video.previewFrames)
    }

    mutating func tuning(_ tuning: ShrinkPlan.Tuning) {
        double(tuning.dctMargin)
        double(tuning.boxMargin)
    }

    mutating func request(_ request: ThumbnailRequest) {
        kind(request.kind)
        int(request.scale)
        encoder(request.encoder)
        bool(request.appliesOrientation)
        bool(request.focus != nil)
        if let focus = request.focus {
            double(focus.x)
            double(focus.y)
            double(focus.width)
            double(focus.height)
        }
        bool(request.placedCentre != nil)
        if let centre = request.placedCentre {
            double(centre.x)
            double(centre.y)
        }
    }

    mutating func kind(_ kind: SlotKind) {
        string(kind.name)
        double(kind.widthPoints)
        double(kind.heightPoints)
        let scales = kind.scales.prefix(WorkerProtocol.maxScalesPerKind)
        count(scales.count)
        for scale in scales { int(scale) }
        uint8(ContentModeTag(kind.mode).rawValue)
        switch kind.mask {
        case .none: uint8(MaskTag.none.rawValue)
        case .circle: uint8(MaskTag.circle.rawValue)
        case .cornerRadius(let points):
            uint8(MaskTag.cornerRadius.rawValue)
            double(points)
        }
        bool(kind.upscale)
        bool(kind.pregenerate)
        uint8(CropModeTag(kind.crop).rawValue)
        uint8(AnimationTag(kind.animation).rawValue)
    }

    mutating func encoder(_ settings: EncoderSettings) {
        uint8(EncoderFormatTag(settings.format).rawValue)
        int(settings.jpegQuality)
        bool(settings.jpegProgressive)
        int(settings.pngCompressionLevel)
        int(settings.webpQuality)
        uint8(WebPModeTag(settings.webpMode).rawValue)
        int(settings.avifQuality)
        int(settings.avifSpeed)
    }
}

extension FrameReader {
    mutating func fileStatus(_ field: String) throws(WorkerProtocolError) -> FileStatus {
        let size = try int(field + ".size")
        guard size >= 0 else { throw WorkerProtocolError(field: field + ".size", problem: "negative (\(size))") }
        return FileStatus(size: size, modifiedNanoseconds: Int64(bitPattern: try uint64(field + ".modifiedNanoseconds")),
                          inode: try uint64(field + ".inode"), device: try uint64(field + ".device"))
    }

    mutating func limits(_ field: String) throws(WorkerProtocolError) -> ImageLimits {
        var limits = ImageLimits()
        limits.maxPixels = try int(field + ".maxPixels")
        limits.maxDimension = try int(field + ".maxDimension")
        limits.maxFileBytes = try int(field + ".maxFileBytes")
        limits.maxProgressiveScans = try int(field + ".maxProgressiveScans")
        limits.maxDecoderMemoryBytes = try int(field + ".maxDecoderMemoryBytes")
        limits.maxOutputPixels = try int(field + ".maxOutputPixels")
        limits.maxAnimationFrames = try int(field + ".maxAnimationFrames")
        limits.maxAnimationPixels = try int(field + ".maxAnimationPixels")
        limits.video = try videoLimits(field + ".video")
        return limits
    }

    mutating func videoLimits(_ field: String) throws(WorkerProtocolError) -> VideoLimits {
        var video = VideoLimits()
        let bits = try uint64(field + ".codecs")
        let known = UInt64(VideoCodec.allCases.reduce(UInt32(0)) { $0 | $1.wireBit })
        guard bits & ~known == 0 else {
            throw WorkerProtocolError(field: field + ".codecs", problem: "names codecs this build does not know (bits \(bits & ~known))")
        }
        video.codecs = VideoLimits.codecs(fromBits: UInt32(bits))
        video.maxBytesRead = try int(field + ".maxBytesRead")
        video.maxPackets = try int(field + ".maxPackets")
        video.previewFrames = try int(field + ".previewFrames")
        return video
    }

    mutating func tuning(_ field: String) throws(WorkerProtocolError) -> ShrinkPlan.Tuning {
        var tuning = ShrinkPlan.Tuning()
        tuning.dctMargin = try double(field + ".dctMargin")
        tuning.boxMargin = try double(field + ".boxMargin")
        return tuning
    }

    mutating func request(_ field: String) throws(WorkerProtocolError) -> ThumbnailRequest {
        let kind = try kind(field + ".kind")
        let scale = try int(field + ".scale")
        let encoder = try encoder(field + ".encoder")
        let appliesOrientation = try bool(field + ".appliesOrientation")
        var focus: FocusRegion?
        if try bool(field + ".focus") {
            let x = try double(field + ".focus.x"), y = try double(field + ".focus.y")
            let width = try double(field + ".focus.width"), height = try double(field + ".focus.height")
            guard let region = FocusRegion(x: x, y: y, width: width, height: height) else {
                throw WorkerProtocolError(field: field + ".focus", problem: "\(x),\(y) \(width)x\(height) is not a region of the unit square")
            }
            focus = region
        }
        var placedCentre: FocusRegion?
        if try bool(field + ".placedCentre") {
            placedCentre = try point(field + ".placedCentre")
        }
        return ThumbnailRequest(kind: kind, scale: scale, encoder: encoder, appliesOrientation: appliesOrientation, focus: focus,
                                placedCentre: placedCentre)
    }

    /// A point of the unit square (a placed crop's centre), as two doubles.
    mutating func point(_ field: String) throws(WorkerProtocolError) -> FocusRegion {
        let x = try double(field + ".x"), y = try double(field + ".y")
        guard let point = FocusRegion(x: x, y: y) else {
            throw WorkerProtocolError(field: field, problem: "\(x),\(y) is not a point of the unit square")
        }
        return point
    }

    mutating func kind(_ field: String) throws(WorkerProtocolError) -> SlotKind {
        let name = try string(field + ".name")
        let width = try double(field + ".widthPoints")
        let height = try double(field + ".heightPoints")
        let scaleCount = try count(max: WorkerProtocol.maxScalesPerKind, field + ".scales.count")
        var scales: [Int] = []
        for index in 0..<scaleCount { scales.append(try int("\(field).scales[\(index)]")) }
        let mode = try tag(ContentModeTag.self, field + ".mode").mode
        let mask: SlotKind.Mask
        switch try tag(MaskTag.self, field + ".mask") {
        case .none: mask = .none
        case .circle: mask = .circle
        case .cornerRadius: mask = .cornerRadius(points: try double(field + ".mask.points"))
        }
        let upscale = try bool(field + ".upscale"), pregenerate = try bool(field + ".pregenerate")
        return SlotKind(name: name, widthPoints: width, heightPoints: height, scales: scales, mode: mode, mask: mask,
                        upscale: upscale, pregenerate: pregenerate, crop: try tag(CropModeTag.self, field + ".crop").mode,
                        animation: try tag(AnimationTag.self, field + ".animation").animation)
    }

    mutating func encoder(_ field: String) throws(WorkerProtocolError) -> EncoderSettings {
        var settings = EncoderSettings()
        settings.format = try tag(EncoderFormatTag.self, field + ".format").format
        settings.jpegQuality = try int(field + ".jpegQuality")
        settings.jpegProgressive = try bool(field + ".jpegProgressive")
        settings.pngCompressionLevel = try int(field + ".pngCompressionLevel")
        settings.webpQuality = try int(field + ".webpQuality")
        settings.webpMode = try tag(WebPModeTag.self, field + ".webpMode").mode
        settings.avifQuality = try int(field + ".avifQuality")
        settings.avifSpeed = try int(field + ".avifSpeed")
        return settings
    }
}

// Wire tags, fixed here rather than taken from the enums' declaration order or raw strings.

enum ContentModeTag: UInt8 {
    case fill = 0, fit = 1

    // Switches, not ternaries: a case added to the enum must fail to compile here.
    init(_ mode: SlotKind.ContentMode) {
        switch mode {
        case .fill: self = .fill
        case .fit: self = .fit
        }
    }

    var mode: SlotKind.ContentMode {
        switch self {
        case .fill: .fill
        case .fit: .fit
        }
    }
}

enum CropModeTag: UInt8 {
    case centre = 0, attention = 1, focus = 2

    init(_ mode: SlotKind.CropMode) {
        switch mode {
        case .centre: self = .centre
        case .attention: self = .attention
        case .focus: self = .focus
        }
    }

    var mode: SlotKind.CropMode {
        switch self {
        case .centre: .centre
        case .attention: .attention
        case .focus: .focus
        }
    }
}

enum AnimationTag: UInt8 {
    case still = 0, keep = 1

    init(_ animation: SlotKind.Animation) {
        switch animation {
        case .still: self = .still
        case .keep: self = .keep
        }
    }

    var animation: SlotKind.Animation {
        switch self {
        case .still: .still
        case .keep: .keep
        }
    }
}

enum MaskTag: UInt8 {
    case none = 0, circle = 1, cornerRadius = 2
}

enum EncoderFormatTag: UInt8 {
    case auto = 0, jpeg = 1, png = 2, webp = 3, avif = 4

    init(_ format: EncoderSettings.Format) {
        switch format {
        case .auto: self = .auto
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        case .avif: self = .avif
        }
    }

    var format: EncoderSettings.Format {
        switch self {
        case .auto: .auto
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        }
    }
}

enum WebPModeTag: UInt8 {
    case auto = 0, lossy = 1, lossless = 2

    init(_ mode: EncoderSettings.WebPMode) {
        switch mode {
        case .auto: self = .auto
        case .lossy: self = .lossy
        case .lossless: self = .lossless
        }
    }

    var mode: EncoderSettings.WebPMode {
        switch self {
        case .auto: .auto
        case .lossy: .lossy
        case .lossless: .lossless
        }
    }
}

enum ImageFormatTag: UInt8 {
    case jpeg = 0, png = 1, webp = 2, avif = 3

    init(_ format: ImageFormat) {
        switch format {
        case .jpeg: self = .jpeg
        case .png: self = .png
        case .webp: self = .webp
        case .avif: self = .avif
        }
    }

    var format: ImageFormat {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        }
    }

    /// How an encoded file of this format begins (`nil` bytes match anything): the daemon serves
    /// a worker's bytes with the format's media type, so they must at least look the part.
    var signature: [UInt8?] {
        switch self {
        case .jpeg: [0xFF, 0xD8, 0xFF]
        case .png: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        case .webp: Array("RIFF".utf8) + [nil, nil, nil, nil] + Array("WEBP".utf8)
        case .avif: [nil, nil, nil, nil] + Array("ftyp".utf8)
        }
    }
}
