import Foundation
import Testing
import ThumbConfiguration
import ThumbImaging

/// `encoding.format` / `formats`, per kind, and the negotiation of a request's format with
/// `format=` and `Accept`.
@Suite("Output formats: config and negotiation")
struct OutputFormatTests {
    static func config(_ encoding: String, kinds: String = #""avatar": {"width": 48, "height": 48}"#) throws(ConfigError) -> ThumbConfig {
        let json = #"{"kinds": {\#(kinds)}, "encoding": {\#(encoding)}}"#
        return try ThumbConfig.parse(Data(json.utf8), file: "test.json", relativeTo: "/tmp")
    }

    static func kind(_ config: ThumbConfig, _ name: String) throws -> SlotKind {
        try #require(config.catalog.kinds[name])
    }

    static let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

    @Test func withoutFormatOrTellingAcceptTheChoiceIsTodays() throws {
        let config = try Self.config(#""format": "auto""#)
        let formats = config.outputFormats.formats(for: try Self.kind(config, "avatar"))
        for accept in [nil, "*/*", "image/*", "image/jpeg, image/png", "text/html"] {
            let chosen = try formats.choose(asked: nil, accept: accept)
            #expect(chosen.format == .auto, "\(accept ?? "no Accept")")
            // WebP is allowed by default: another Accept would change the answer.
            #expect(chosen.variesWithAccept)
        }
    }

    @Test func acceptPicksTheBestAllowedFormat() throws {
        let config = try Self.config(#""formats": ["jpeg", "png", "webp", "avif"]"#,
                                     kinds: #""avatar": {"width": 48, "height": 48}, "card": {"width": 200, "height": 180, "pregenerate": true}"#)
        let avatar = config.outputFormats.formats(for: try Self.kind(config, "avatar"))
        let card = config.outputFormats.formats(for: try Self.kind(config, "card"))
        // AVIF only where the kind is pre-rendered.
        #expect(try avatar.choose(asked: nil, accept: Self.chrome).format == .webp)
        #expect(try card.choose(asked: nil, accept: Self.chrome).format == .avif)
        #expect(try card.choose(asked: nil, accept: "image/webp").format == .webp)
        #expect(try card.choose(asked: nil, accept: "image/avif;q=0, image/webp;q=0.5").format == .webp)
        #expect(try card.choose(asked: nil, accept: "IMAGE/AVIF").format == .avif)
        #expect(throws: OutputFormats.Refusal.self) { try avatar.choose(asked: .avif, accept: nil) }
    }

    @Test func formatParameterWinsAndMustBeAllowed() throws {
        let config = try Self.config(#""formats": ["jpeg", "png", "webp"]"#)
        let formats = config.outputFormats.formats(for: try Self.kind(config, "avatar"))
        let asked = try formats.choose(asked: .png, accept: Self.chrome)
        #expect(asked.format == .png && !asked.variesWithAccept)
        #expect(try formats.choose(asked: .auto, accept: Self.chrome).format == .auto)
        #expect(throws: OutputFormats.Refusal.self) { try formats.choose(asked: .avif, accept: nil) }
    }

    @Test func aKindsOwnEncodingOverridesTheDefaults() throws {
        let config = try Self.config(#""format": "auto""#, kinds: #"""
            "avatar": {"width": 48, "height": 48, "encoding": {"format": "webp", "formats": ["webp"]}},
            "row": {"width": 56, "height": 56}
            """#)
        let avatar = config.outputFormats.formats(for: try Self.kind(config, "avatar"))
        #expect(avatar.preferred == .webp && avatar.allowed == [.webp])
        #expect(try avatar.choose(asked: nil, accept: nil).format == .webp)
        #expect(throws: OutputFormats.Refusal.self) { try avatar.choose(asked: .jpeg, accept: nil) }
        let row = config.outputFormats.formats(for: try Self.kind(config, "row"))
        #expect(row.preferred == .auto && row.allowed == [.jpeg, .png, .webp])
    }

    @Test("bad encoding configs name the key", arguments: [
        (#""format": "gif""#, "format"),
        (#""formats": []"#, "formats"),
        (#""formats": ["jpeg", "tiff"]"#, "formats"),
        (#""formats": ["webp"]"#, "formats"), // auto needs JPEG and PNG
        (#""format": "png", "formats": ["jpeg"]"#, "formats"),
    ])
    func badEncoding(_ encoding: String, _ key: String) {
        do {
            _ = try Self.config(encoding)
            Issue.record("accepted \(encoding)")
        } catch {
            #expect(error.key.hasSuffix(key), "\(error)")
        }
    }

    @Test func avifOnAKindThatIsNotPreRenderedIsRefused() {
        #expect(throws: ConfigError.self) {
            _ = try Self.config("", kinds: #""avatar": {"width": 48, "height": 48, "encoding": {"formats": ["jpeg", "png", "avif"]}}"#)
        }
        #expect(throws: Never.self) {
            _ = try Self.config("", kinds: #""avatar": {"width": 48, "height": 48, "pregenerate": true, "encoding": {"format": "avif"}}"#)
        }
    }

    @Test func webpAndAvifSettingsAreRangeChecked() throws {
        let config = try Self.config(#""webpQuality": 70, "webpMode": "lossless", "avifQuality": 50, "avifSpeed": 8"#)
        #expect(config.encoder.webpQuality == 70 && config.encoder.webpMode == .lossless)
        #expect(config.encoder.avifQuality == 50 && config.encoder.avifSpeed == 8)
        for bad in [#""webpQuality": 0"#, #""webpMode": "fast""#, #""avifQuality": 101"#, #""avifSpeed": 10"#] {
            #expect(throws: ConfigError.self, "\(bad)") { _ = try Self.config(bad) }
        }
    }
}
