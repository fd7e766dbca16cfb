package import ThumbAccess
package import Foundation
package import ThumbImaging

/// thumbd's configuration file (JSON). Relative paths are resolved against the file's folder.
package struct ThumbConfig: Sendable, Equatable {
    /// The asset root, when the file names one.
    package var assetRoot: String?
    package var catalog = SlotCatalog()
    package var limits = ImageLimits()
    package var encoder = EncoderSettings()
    package var outputFormats = OutputFormatPolicy()
    package var shrinkTuning = ShrinkPlan.Tuning()
    package var service = ServiceSettings()
    /// Who may do what (`access`).
    package var access = AccessSettings()

    package init() {}

    /// Reads and validates `path`; every error names the file and the key.
    package static func load(path: String) throws(ConfigError) -> ThumbConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(file: path, key: "", reason: "cannot read: \((error as NSError).localizedDescription)")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try parse(data, file: path, relativeTo: folder)
    }

    /// Parses and validates a config's bytes: every value is held to its range, and every error
    /// names the file, the key and the range. A pure function of its input (no file is read),
    /// used by `load`, by the daemon's reload and by the fuzz target for kind configs.
    package static func parse(_ data: Data, file: String, relativeTo folder: String) throws(ConfigError) -> ThumbConfig {
        let root = try JSONFields(JSONValue.parse(data, file: file), path: "", file: file)
        try root.allowOnly(["assets", "kinds", "limits", "formats", "encoding", "resampling", "cache", "workers", "sandbox", "server", "spool", "queue",
                            "access"])
        var config = ThumbConfig()
        if let assets = try root.string("assets") {
            config.assetRoot = assets.hasPrefix("/") ? assets : folder + "/" + assets
        }
        if let limits = try root.fields("limits") {
            config.limits = try parseLimits(limits)
            // The worker's bounds live with the image limits in the file, but the daemon enforces them.
            if let bytes = try limits.integer("workerMemoryBytes", in: (256 << 20)...(1 << 40)) { config.service.workerMemoryBytes = bytes }
            if let seconds = try limits.number("renderSeconds", in: 0.1...3600, unit: "seconds") { config.service.renderSeconds = seconds }
        }
        if let formats = try root.fields("formats") {
            try formats.allowOnly(["video"])
            if let video = try formats.fields("video") { config.limits.video = try parseVideo(video, maxAnimationFrames: config.limits.maxAnimationFrames) }
        }
        try parseService(root, into: &config, folder: folder)
        if let access = try root.fields("access") { config.access = try parseAccess(access, folder: folder) }
        if let encoding = try root.fields("encoding") {
            config.encoder = try parseEncoding(encoding)
            config.outputFormats.defaults = try parseFormats(encoding, over: OutputFormats(), pregenerate: nil)
        }
        if let resampling = try root.fields("resampling") {
            try resampling.allowOnly(["dctMargin", "boxMargin"])
            // A margin is a reduction factor: past 64 no shrink-on-load would ever happen.
            if let margin = try resampling.number("dctMargin", in: 1...64, unit: "times") { config.shrinkTuning.dctMargin = margin }
            if let margin = try resampling.number("boxMargin", in: 1...64, unit: "times") { config.shrinkTuning.boxMargin = margin }
        }
        guard let kinds = try root.fields("kinds") else { throw root.fail("kinds", "is required") }
        var parsed = [SlotKind]()
        for name in kinds.object.keys.sorted() {
            guard !name.isEmpty, name.utf8.count <= SlotBounds.maxTextBytes, name.first?.isLetter == true,
                  name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw kinds.fail(name, "a kind's name starts with a letter, has only letters, digits, - and _, and is at most \(SlotBounds.maxTextBytes) bytes")
            }
            guard let fields = try kinds.fields(name) else { continue }
            let kind = try parseKind(name: name, fields: fields, maxOutputPixels: config.limits.maxOutputPixels)
            if let encoding = try fields.fields("encoding") {
                try encoding.allowOnly(["format", "formats"])
                config.outputFormats.byKind[name] = try parseFormats(encoding, over: config.outputFormats.formats(for: kind),
                                                                     pregenerate: kind.pregenerate)
            }
            parsed.append(kind)
        }
        config.catalog = SlotCatalog(kinds: parsed, maxOutputPixels: config.limits.maxOutputPixels)
        return config
    }

    static func parseLimits(_ fields: JSONFields) throws(ConfigError) -> ImageLimits {
        try fields.allowOnly(["maxPixels", "maxDimension", "maxFileBytes", "maxProgressiveScans", "maxDecoderMemoryBytes",
                              "maxOutputPixels", "maxAnimationFrames", "maxAnimationPixels", "workerMemoryBytes", "renderSeconds"])
        var limits = ImageLimits()
        if let value = try fields.integer("maxPixels", in: 1...4_000_000_000) { limits.maxPixels = value }
        if let value = try fields.integer("maxDimension", in: 1...65_500) { limits.maxDimension = value }
        if let value = try fields.integer("maxFileBytes", in: 1...(1 << 40)) { limits.maxFileBytes = value }
        if let value = try fields.integer("maxProgressiveScans", in: 1...100_000) { limits.maxProgressiveScans = value }
        if let value = try fields.integer("maxDecoderMemoryBytes", in: (1 << 20)...(1 << 40)) { limits.maxDecoderMemoryBytes = value }
        if let value = try fields.integer("maxOutputPixels", in: 1...SlotBounds.outputPixelsCeiling) { limits.maxOutputPixels = value }
        if let value = try fields.integer("maxAnimationFrames", in: 1...100_000) { limits.maxAnimationFrames = value }
        if let value = try fields.integer("maxAnimationPixels", in: 1...(1 << 40)) { limits.maxAnimationPixels = value }
        return limits
    }

    /// `formats.video`: the codec allow-list and what a poster or preview may read.
    static func parseVideo(_ fields: JSONFields, maxAnimationFrames: Int) throws(ConfigError) -> VideoLimits {
        try fields.allowOnly(["codecs", "maxBytesRead", "maxPackets", "previewFrames"])
        var video = VideoLimits()
        if let list = try fields.array("codecs") {
            var codecs = Set<VideoCodec>()
            for item in list {
                guard case .string(let text) = item, let codec = VideoCodec(rawValue: text) else {
                    throw fields.fail("codecs", "lists codecs among \(VideoCodec.allCases.map(\.rawValue).joined(separator: ", ")), got \(item.kindDescription)")
                }
                codecs.insert(codec)
            }
            video.codecs = codecs
        }
        if let bytes = try fields.integer("maxBytesRead", in: (1 << 16)...(1 << 40)) { video.maxBytesRead = bytes }
        if let packets = try fields.integer("maxPackets", in: 16...1_000_000) { video.maxPackets = packets }
        if let frames = try fields.integer("previewFrames", in: 2...max(2, maxAnimationFrames)) { video.previewFrames = frames }
        video.previewFrames = min(video.previewFrames, maxAnimationFrames)
        return video
    }

    static func parseEncoding(_ fields: JSONFields) throws(ConfigError) -> EncoderSettings {
        try fields.allowOnly(["format", "formats", "jpegQuality", "jpegProgressive", "pngCompressionLevel", "webpQuality", "webpMode",
                              "avifQuality", "avifSpeed"])
        var encoder = EncoderSettings()
        if let format = try fields.string("format") {
            guard let parsed = EncoderSettings.Format(rawValue: format) else {
                throw fields.fail("format", "must be one of \(EncoderSettings.Format.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            encoder.format = parsed
        }
        if let quality = try fields.integer("jpegQuality", in: 1...100) { encoder.jpegQuality = quality }
        if let progressive = try fields.bool("jpegProgressive") { encoder.jpegProgressive = progressive }
        if let level = try fields.integer("pngCompressionLevel", in: 0...9) { encoder.pngCompressionLevel = level }
        if let quality = try fields.integer("webpQuality", in: 1...100) { encoder.webpQuality = quality }
        if let mode = try fields.string("webpMode") {
            guard let parsed = EncoderSettings.WebPMode(rawValue: mode) else {
                throw fields.fail("webpMode", "must be one of \(EncoderSettings.WebPMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            encoder.webpMode = parsed
        }
        if let quality = try fields.integer("avifQuality", in: 1...100) { encoder.avifQuality = quality }
        if let speed = try fields.integer("avifSpeed", in: 0...9) { encoder.avifSpeed = speed }
        return encoder
    }
}
