import Foundation

/// thumbd's configuration file (JSON). Relative paths are resolved against the file's folder.
public struct ThumbConfig: Sendable, Equatable {
    /// The asset root, when the file names one.
    public var assetRoot: String?
    public var catalog = SlotCatalog()
    public var limits = ImageLimits()
    public var encoder = EncoderSettings()
    public var shrinkTuning = ShrinkPlan.Tuning()
    public var service = ServiceSettings()

    public init() {}

    /// Reads and validates `path`; every error names the file and the key.
    public static func load(path: String) throws(ConfigError) -> ThumbConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(file: path, key: "", reason: "cannot read: \((error as NSError).localizedDescription)")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try parse(data, file: path, relativeTo: folder)
    }

    public static func parse(_ data: Data, file: String, relativeTo folder: String) throws(ConfigError) -> ThumbConfig {
        let root = try JSONFields(JSONValue.parse(data, file: file), path: "", file: file)
        try root.allowOnly(["assets", "kinds", "limits", "encoding", "resampling", "cache", "workers", "server", "spool"])
        var config = ThumbConfig()
        if let assets = try root.string("assets") {
            config.assetRoot = assets.hasPrefix("/") ? assets : folder + "/" + assets
        }
        if let limits = try root.fields("limits") { config.limits = try parseLimits(limits) }
        try parseService(root, into: &config, folder: folder)
        if let encoding = try root.fields("encoding") { config.encoder = try parseEncoding(encoding) }
        if let resampling = try root.fields("resampling") {
            try resampling.allowOnly(["dctMargin", "boxMargin"])
            if let margin = try resampling.number("dctMargin") {
                guard margin >= 1 else { throw resampling.fail("dctMargin", "must be at least 1") }
                config.shrinkTuning.dctMargin = margin
            }
            if let margin = try resampling.number("boxMargin") {
                guard margin >= 1 else { throw resampling.fail("boxMargin", "must be at least 1") }
                config.shrinkTuning.boxMargin = margin
            }
        }
        guard let kinds = try root.fields("kinds") else { throw root.fail("kinds", "is required") }
        var parsed = [SlotKind]()
        for name in kinds.object.keys.sorted() {
            guard !name.isEmpty, name.first?.isLetter == true,
                  name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw kinds.fail(name, "a kind's name starts with a letter and has only letters, digits, - and _")
            }
            guard let fields = try kinds.fields(name) else { continue }
            parsed.append(try parseKind(name: name, fields: fields))
        }
        config.catalog = SlotCatalog(kinds: parsed)
        return config
    }

    static func parseKind(name: String, fields: JSONFields) throws(ConfigError) -> SlotKind {
        try fields.allowOnly(["width", "height", "aspectRatio", "grid", "scales", "mode", "mask", "cornerRadius",
                              "upscale", "pregenerate"])
        var kind = SlotKind(name: name, widthPoints: 0, heightPoints: 0)
        if let grid = try fields.fields("grid") {
            guard !fields.object.keys.contains("width") else { throw fields.fail("width", "a grid kind takes its width from 'grid'") }
            try grid.allowOnly(["columns", "containerWidth", "leadingInset", "trailingInset", "spacing"])
            guard let columns = try grid.integer("columns", in: 1...64) else { throw grid.fail("columns", "is required") }
            guard let container = try grid.positiveNumber("containerWidth") else { throw grid.fail("containerWidth", "is required") }
            let layout = GridLayout(columns: columns, containerWidth: container,
                                    leadingInset: try grid.nonNegativeNumber("leadingInset") ?? 0,
                                    trailingInset: try grid.nonNegativeNumber("trailingInset") ?? 0,
                                    interItemSpacing: try grid.nonNegativeNumber("spacing") ?? 0)
            guard layout.itemWidth >= 1 else { throw fields.fail("grid", "leaves no room for an item (width \(layout.itemWidth) pt)") }
            kind.widthPoints = layout.itemWidth
        } else {
            guard let width = try fields.positiveNumber("width") else { throw fields.fail("width", "is required (points), or give 'grid'") }
            kind.widthPoints = width
        }
        if let height = try fields.positiveNumber("height") {
            guard !fields.object.keys.contains("aspectRatio") else { throw fields.fail("aspectRatio", "give 'height' or 'aspectRatio', not both") }
            kind.heightPoints = height
        } else if let ratio = try fields.positiveNumber("aspectRatio") {
            kind.heightPoints = (kind.widthPoints / ratio).rounded()
        } else {
            throw fields.fail("height", "is required (points), or give 'aspectRatio' (width / height)")
        }
        if let scales = try fields.array("scales") {
            guard !scales.isEmpty else { throw fields.fail("scales", "must list at least one scale") }
            kind.scales = []
            for item in scales {
                guard case .number(let scale) = item, SlotSpec.supportedScales.contains(Int(scale)), scale == scale.rounded() else {
                    throw fields.fail("scales", "must be whole numbers from 1 to 4")
                }
                kind.scales.append(Int(scale))
            }
        }
        if let mode = try fields.string("mode") {
            guard let parsed = SlotKind.ContentMode(rawValue: mode) else { throw fields.fail("mode", "must be 'fill' or 'fit'") }
            kind.mode = parsed
        }
        if let mask = try fields.string("mask") {
            guard mask == "circle" || mask == "none" else { throw fields.fail("mask", "must be 'circle' or 'none' (use cornerRadius for rounded corners)") }
            kind.mask = mask == "circle" ? .circle : .none
        }
        if let radius = try fields.nonNegativeNumber("cornerRadius") {
            guard kind.mask == .none else { throw fields.fail("cornerRadius", "cannot be combined with mask 'circle'") }
            kind.mask = .cornerRadius(points: radius)
        }
        kind.upscale = try fields.bool("upscale") ?? false
        kind.pregenerate = try fields.bool("pregenerate") ?? false
        do {
            try SlotSpec.validate(kind, in: name)
        } catch {
            throw fields.fail("", error.reason)
        }
        return kind
    }

    static func parseLimits(_ fields: JSONFields) throws(ConfigError) -> ImageLimits {
        try fields.allowOnly(["maxPixels", "maxDimension", "maxFileBytes", "maxProgressiveScans", "maxDecoderMemoryBytes"])
        var limits = ImageLimits()
        if let value = try fields.integer("maxPixels", in: 1...4_000_000_000) { limits.maxPixels = value }
        if let value = try fields.integer("maxDimension", in: 1...65_500) { limits.maxDimension = value }
        if let value = try fields.integer("maxFileBytes", in: 1...(1 << 40)) { limits.maxFileBytes = value }
        if let value = try fields.integer("maxProgressiveScans", in: 1...100_000) { limits.maxProgressiveScans = value }
        if let value = try fields.integer("maxDecoderMemoryBytes", in: (1 << 20)...(1 << 40)) { limits.maxDecoderMemoryBytes = value }
        return limits
    }

    static func parseEncoding(_ fields: JSONFields) throws(ConfigError) -> EncoderSettings {
        try fields.allowOnly(["format", "jpegQuality", "jpegProgressive", "pngCompressionLevel"])
        var encoder = EncoderSettings()
        if let format = try fields.string("format") {
            guard let parsed = EncoderSettings.Format(rawValue: format) else { throw fields.fail("format", "must be auto, jpeg or png") }
            encoder.format = parsed
        }
        if let quality = try fields.integer("jpegQuality", in: 1...100) { encoder.jpegQuality = quality }
        if let progressive = try fields.bool("jpegProgressive") { encoder.jpegProgressive = progressive }
        if let level = try fields.integer("pngCompressionLevel", in: 0...9) { encoder.pngCompressionLevel = level }
        return encoder
    }
}
