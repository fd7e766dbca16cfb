import ThumbImaging

extension ThumbConfig {
    /// `format` (auto | jpeg | png | webp | avif) and `formats` (the allow-list) of `fields`, over
    /// `base`. `pregenerate`: nil for the `encoding` section, else whether the kind is pre-rendered.
    static func parseFormats(_ fields: JSONFields, over base: OutputFormats, pregenerate: Bool?) throws(ConfigError) -> OutputFormats {
        var formats = base
        if let text = try fields.string("format") {
            guard let parsed = EncoderSettings.Format(rawValue: text) else {
                throw fields.fail("format", "must be one of \(EncoderSettings.Format.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            formats.preferred = parsed
        }
        if let list = try fields.array("formats") {
            var allowed = Set<ImageFormat>()
            for item in list {
                guard case .string(let text) = item, let format = ImageFormat(rawValue: text) else {
                    throw fields.fail("formats", "lists formats among \(ImageFormat.allCases.map(\.rawValue).joined(separator: ", ")), got \(item.kindDescription)")
                }
                allowed.insert(format)
            }
            guard !allowed.isEmpty else { throw fields.fail("formats", "must list at least one format") }
            formats.allowed = allowed
        } else if let preferred = formats.preferred.imageFormat {
            formats.allowed.insert(preferred)
        }
        switch formats.preferred.imageFormat {
        case nil where !formats.allowed.isSuperset(of: [.jpeg, .png]):
            throw fields.fail("formats", "must include jpeg and png while format is auto (it writes one or the other)")
        case let preferred? where !formats.allowed.contains(preferred):
            throw fields.fail("formats", "must include the format \(preferred.rawValue)")
        default: break
        }
        if pregenerate == false, formats.allowed.contains(.avif) {
            throw fields.fail("formats", "allows avif only for a kind with pregenerate: true (an AVIF encode takes many times a JPEG's: "
                              + "never on a request's path); batch jobs may ask for avif of any kind")
        }
        return formats
    }
}
