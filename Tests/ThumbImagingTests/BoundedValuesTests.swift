import Foundation
import Testing
import ThumbTestSupport
import ThumbConfiguration
import ThumbImaging

/// Issue 8, items 1 and 9: no size, scale or ratio from a spec or a config can trap the pixel
/// arithmetic, and no selection may ask for more than `limits.maxOutputPixels`. On 31927a0 the
/// huge values trapped (`Int(Double)` in `SlotKind.pixelSize`) and the oversized specs rendered.
@Suite("Bounded values: specs, kinds, config")
struct BoundedValuesTests {
    @Test("the checked conversion refuses what Int(Double) traps on")
    func checkedConversion() {
        for value in [Double.nan, .infinity, -.infinity, 1e19, -1e19, 9.3e18, Double(Int.max)] {
            #expect(CheckedConversion.integer(value) == nil, "\(value)")
        }
        #expect(CheckedConversion.integer(2.5) == 3)
        #expect(CheckedConversion.integer(2.4, in: 3...4) == nil)
        #expect(CheckedConversion.clampedInteger(.nan, to: 1...8) == 1)
        #expect(CheckedConversion.clampedInteger(1e300, to: 1...8) == 8)
        #expect(CheckedConversion.clampedInteger(-.infinity, to: 1...8) == 1)
        #expect(CheckedConversion.clampedInteger(1e300, to: Int.min...Int.max) == Int.max)
        #expect(CheckedConversion.wholeNumber(1.5, in: 1...4) == nil && CheckedConversion.wholeNumber(4, in: 1...4) == 4)
    }

    @Test("a display scale is 1 to 4, written plainly")
    func displayScale() {
        #expect(["1", "2", "3", "4"].compactMap { DisplayScale(text: $0)?.value } == [1, 2, 3, 4])
        for text in ["0", "5", "+2", "02", " 2", "2x", "1e0", "", "٣"] { #expect(DisplayScale(text: text) == nil, "'\(text)'") }
        #expect(DisplayScale(text: "2x", allowsSuffix: true)?.value == 2)
        for number in [1e17, 0, -5, 1.5, .nan, 4.000001] { #expect(DisplayScale(json: number) == nil, "\(number)") }
        #expect(DisplayScale(json: 3)?.value == 3)
    }

    @Test("a kind built in code with absurd sizes gives a clamped pixel size, not a trap")
    func unvalidatedKindDoesNotTrap() {
        let huge = SlotKind(name: "huge", widthPoints: 1e19, heightPoints: .infinity)
        #expect(huge.checkedPixelSize(scale: 4) == nil)
        #expect(huge.pixelSize(scale: 4) == (SlotBounds.maxPixelsPerSide, SlotBounds.maxPixelsPerSide))
        let nan = SlotKind(name: "nan", widthPoints: .nan, heightPoints: 1e-300)
        #expect(nan.checkedPixelSize(scale: 1) == nil)
        #expect(nan.pixelSize(scale: 1) == (1, 1))
    }

    @Test("inline specs with huge, tiny or non-decimal sizes are refused",
          arguments: ["1e19x1", "1x1e19", "1e19x1@4x", "100000x1", "8193x1", "0.1x0.1", "1e-300x5", "0x1p3x8", "0x10x10",
                      "nanx1", "48x48,radius=1e19", "48x48,radius=9000", "48.x48", ".5x48", "+4x4"])
    func hugeOrTinySpecs(_ text: String) {
        #expect(throws: SlotSpecError.self, "\(text)") { try SlotSpec.parse(text) }
        #expect(throws: SlotSpecError.self, "\(text)") { try ThumbConfig.builtIn.catalog.resolve(text) }
    }

    @Test("limits.maxOutputPixels caps every selection, upscaled or not, before any work")
    func outputPixelCap() throws {
        let refused = ["2048x2048@4x,upscale,fill", "2048x2048@4x", "8192x8192", "4097x4096"]
        for text in refused {
            do {
                _ = try SlotSpec.parse(text)
                Issue.record("\(text) accepted")
            } catch {
                #expect(error.reason.contains("limits.maxOutputPixels") || error.reason.contains("8192 px"), "\(text): \(error)")
            }
        }
        #expect(try SlotSpec.parse("1024x1024@4x,upscale,fill").kind.pixelSize(scale: 4) == (4096, 4096))
        #expect(try SlotSpec.parse("4096x4096").kind.pixelSize(scale: 1) == (4096, 4096))
        // The cap follows the catalog's limit, for names at a scale and for scale overrides.
        let catalog = SlotCatalog(kinds: [SlotKind(name: "poster", widthPoints: 2048, heightPoints: 2048)], maxOutputPixels: 4096 * 4096)
        #expect(try catalog.resolve("poster@2x").scale == 2)
        #expect(throws: SlotSpecError.self) { try catalog.resolve("poster@4x") }
        #expect(throws: SlotSpecError.self) { try catalog.resolve("poster", scale: DisplayScale(3)) }
        #expect(try catalog.resolve("poster", scale: DisplayScale(2)).scales == [2])
        let roomy = SlotCatalog(kinds: [], maxOutputPixels: SlotBounds.outputPixelsCeiling)
        #expect(try roomy.resolve("2048x2048@4x,upscale,fill").kind.pixelSize(scale: 4) == (8192, 8192))
    }

    @Test("a long spec or name is refused, and the error does not carry all of it")
    func longTextIsRefusedShort() {
        for text in ["48x48," + String(repeating: "fill,", count: 100_000), "n" + String(repeating: "a", count: 1 << 20)] {
            do {
                _ = try ThumbConfig.builtIn.catalog.resolve(text)
                Issue.record("a \(text.utf8.count)-byte spec accepted")
            } catch {
                #expect(error.description.utf8.count < 500, "\(error.description.utf8.count)-byte error")
                #expect(error.reason.contains("at most 256 bytes"), "\(error.reason)")
            }
        }
    }

    struct BadKind: CustomTestStringConvertible, Sendable {
        var json: String
        var key: String
        var says: String
        var testDescription: String { json }
    }

    static let badKinds: [BadKind] = [
        BadKind(json: #"{"a": {"width": 1e19, "height": 10}}"#, key: "kinds.a.width", says: "at most 8192"),
        BadKind(json: #"{"a": {"width": 10, "height": 1e19}}"#, key: "kinds.a.height", says: "at most 8192"),
        BadKind(json: #"{"a": {"width": 1e-300, "height": 10}}"#, key: "kinds.a", says: "1 to 8192 px"),
        BadKind(json: #"{"a": {"width": 10, "aspectRatio": 1e-300}}"#, key: "kinds.a.aspectRatio", says: "from"),
        BadKind(json: #"{"a": {"width": 10, "aspectRatio": 1e300}}"#, key: "kinds.a.aspectRatio", says: "from"),
        BadKind(json: #"{"a": {"width": 10, "aspectRatio": 100}}"#, key: "kinds.a.aspectRatio", says: "gives a height of 0 pt"),
        BadKind(json: #"{"a": {"width": 10, "height": 10, "scales": [1e19]}}"#, key: "kinds.a.scales", says: "1 to 4"),
        BadKind(json: #"{"a": {"width": 10, "height": 10, "scales": [1e-300]}}"#, key: "kinds.a.scales", says: "1 to 4"),
        BadKind(json: #"{"a": {"width": 10, "height": 10, "scales": [2.5]}}"#, key: "kinds.a.scales", says: "1 to 4"),
        BadKind(json: #"{"a": {"width": 10, "height": 10, "scales": [true]}}"#, key: "kinds.a.scales", says: "got true"),
        BadKind(json: #"{"a": {"width": 10, "height": 10, "cornerRadius": 1e19}}"#, key: "kinds.a.cornerRadius", says: "0 to 8192"),
        BadKind(json: #"{"a": {"grid": {"columns": 2, "containerWidth": 1e19}, "height": 10}}"#, key: "kinds.a.grid.containerWidth",
                says: "at most 100000"),
        BadKind(json: #"{"a": {"grid": {"columns": 2, "containerWidth": 100, "spacing": 1e300}, "height": 10}}"#,
                key: "kinds.a.grid.spacing", says: "0 to 100000"),
        BadKind(json: #"{"a": {"width": 2048, "height": 2048, "scales": [4], "upscale": true}}"#, key: "kinds.a",
                says: "limits.maxOutputPixels (16777216)"),
    ]

    @Test("kind configs with huge or tiny values are refused, naming the key and the range", arguments: badKinds)
    func badKindConfig(_ bad: BadKind) {
        let json = #"{"kinds": \#(bad.json)}"#
        do {
            _ = try ThumbConfig.parse(Data(json.utf8), file: "bounds.json", relativeTo: "/")
            Issue.record("accepted: \(json)")
        } catch {
            #expect(error.key == bad.key, "\(json): key '\(error.key)' (\(error.reason))")
            #expect(error.reason.contains(bad.says), "\(json): '\(error.reason)' does not say '\(bad.says)'")
        }
    }

    @Test("limits.maxOutputPixels is a config key with a range")
    func maxOutputPixelsConfig() throws {
        let roomy = #"{"limits": {"maxOutputPixels": 67108864}, "kinds": {"a": {"width": 2048, "height": 2048, "scales": [4]}}}"#
        let config = try ThumbConfig.parse(Data(roomy.utf8), file: "c.json", relativeTo: "/")
        #expect(config.limits.maxOutputPixels == 8192 * 8192 && config.catalog.maxOutputPixels == 8192 * 8192)
        #expect(try config.catalog.resolve("a").kind.pixelSize(scale: 4) == (8192, 8192))
        #expect(ImageLimits().maxOutputPixels == 4096 * 4096)
        for value in ["1e19", "0", "1.5", "67108865", "true"] {
            let json = #"{"limits": {"maxOutputPixels": \#(value)}, "kinds": {}}"#
            #expect(throws: ConfigError.self, "\(value)") { try ThumbConfig.parse(Data(json.utf8), file: "c.json", relativeTo: "/") }
        }
    }

    @Test("the sandbox's keys: limits.workerMemoryBytes, limits.renderSeconds and sandbox, each held to its range")
    func sandboxConfig() throws {
        let json = #"{"sandbox": false, "limits": {"workerMemoryBytes": 536870912, "renderSeconds": 2.5}, "kinds": {}}"#
        let config = try ThumbConfig.parse(Data(json.utf8), file: "c.json", relativeTo: "/")
        #expect(!config.service.sandbox && config.service.workerMemoryBytes == 512 << 20 && config.service.renderSeconds == 2.5)
        let defaults = try ThumbConfig.parse(Data(#"{"kinds": {}}"#.utf8), file: "c.json", relativeTo: "/")
        #expect(defaults.service.sandbox && defaults.service.renderSeconds == 60)
        for (key, value) in [("workerMemoryBytes", "1024"), ("workerMemoryBytes", "1e300"), ("renderSeconds", "0"),
                             ("renderSeconds", "1e9"), ("renderSeconds", "\"10\"")] {
            let bad = #"{"limits": {"\#(key)": \#(value)}, "kinds": {}}"#
            #expect { try ThumbConfig.parse(Data(bad.utf8), file: "c.json", relativeTo: "/") } throws: { error in
                (error as? ConfigError)?.description.contains(key) == true
            }
        }
        #expect(throws: ConfigError.self) { try ThumbConfig.parse(Data(#"{"sandbox": 1, "kinds": {}}"#.utf8), file: "c.json", relativeTo: "/") }
    }

    @Test("the renderer refuses an oversized kind that skipped the doors (outputTooLarge, no allocation)")
    func rendererChecksTheOutputToo() throws {
        let source = SourceBytes(PNGBuilder.png(width: 8, height: 8, bitDepth: 8, colorType: 2,
                                                rows: [[UInt8]](repeating: [UInt8](repeating: 200, count: 24), count: 8)))
        let kind = SlotKind(name: "huge", widthPoints: 2048, heightPoints: 2048, mode: .fill, upscale: true)
        do {
            _ = try Thumbnailer().render(source, request: ThumbnailRequest(kind: kind, scale: 4))
            Issue.record("an 8192x8192 output was rendered")
        } catch {
            guard case .outputTooLarge = error else { Issue.record("\(error)"); return }
        }
    }

    @Test("thumbd slots and render with such configs and specs: exit 78 / 64 naming the key, no crash")
    func commandsDoNotCrash() throws {
        let scratch = try ScratchDirectory("bounds")
        defer { scratch.remove() }
        for (index, bad) in Self.badKinds.prefix(7).enumerated() {
            let path = scratch.path("c\(index).json")
            try Data(#"{"kinds": \#(bad.json)}"#.utf8).write(to: URL(fileURLWithPath: path))
            let result = try MeasuredChild.run(try requireThumbd(), ["slots", "--config", path])
            #expect(result.exitCode == 78, "\(bad.json): \(result.summary)")
            #expect(result.stderr.contains("'\(bad.key)'") && result.stderr.contains(path), "\(result.stderr)")
        }
        let input = Paths.corpusFile("pngsuite", "basn6a08.png")
        for spec in ["1e19x1", "1x1@4x,upscale", "2048x2048@4x,upscale,fill"] {
            let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", spec, "--out-dir", scratch.path])
            let refused = spec == "1x1@4x,upscale" ? 0 : 64
            #expect(result.exitCode == Int32(refused), "\(spec): \(result.summary)")
        }
    }
}
