import Foundation
import Testing
import ThumbConfiguration
import ThumbImaging

/// Issue 12: the kinds' `"crop"` key, the inline specs' `crop=` option, and the focus-region text forms.
@Suite("Crop modes in configs and specs")
struct CropConfigTests {
    static func kind(_ fields: String) throws -> SlotKind {
        let json = #"{"kinds": {"k": {"width": 48, "height": 48, "# + fields + "}}}"
        let config = try ThumbConfig.parse(Data(json.utf8), file: "test.json", relativeTo: "/tmp")
        return try #require(config.catalog.kinds["k"])
    }

    @Test("crop: centre (the default, and 'center'), attention (the default of masked fills), focus", arguments: [
        (#""mode": "fill""#, SlotKind.CropMode.centre),
        (#""mode": "fill", "mask": "circle""#, .attention),
        (#""mode": "fill", "cornerRadius": 8"#, .attention),
        (#""mode": "fill", "cornerRadius": 0"#, .centre),
        (#""mode": "fill", "mask": "circle", "crop": "centre""#, .centre),
        (#""mode": "fit", "mask": "circle""#, .centre),
        (#""mode": "fill", "crop": "centre""#, .centre),
        (#""mode": "fill", "crop": "center""#, .centre),
        (#""mode": "fill", "crop": "attention""#, .attention),
        (#""mode": "fill", "mask": "circle", "crop": "focus""#, .focus),
        (#""mode": "fit", "crop": "centre""#, .centre),
    ])
    func goodCrop(_ fields: String, _ crop: SlotKind.CropMode) throws {
        let kind = try Self.kind(fields)
        #expect(kind.crop == crop, "\(fields): \(kind.crop)")
        #expect(kind.cropFollowsFocus == (crop == .focus))
    }

    @Test("a bad crop is a config error naming kinds.k.crop", arguments: [
        #""mode": "fill", "crop": "smart""#, #""mode": "fill", "crop": 1"#, #""mode": "fill", "crop": "Centre""#,
        #""mode": "fit", "crop": "attention""#, #""crop": "focus""#,
    ])
    func badCrop(_ fields: String) {
        do {
            let kind = try Self.kind(fields)
            Issue.record("\(fields): accepted as \(kind.crop)")
        } catch let error as ConfigError {
            #expect(error.key == "kinds.k.crop", "\(fields): key '\(error.key)' (\(error.reason))")
        } catch {
            Issue.record("\(fields): \(error)")
        }
    }

    @Test("inline specs take crop=MODE (fill only), and it names the kind")
    func inlineCrop() throws {
        let focus = try SlotSpec.parse("48x48@3x,fill,circle,crop=focus")
        #expect(focus.kind.crop == .focus && focus.kind.mask == .circle && focus.kind.name == "48x48-fill-circle-crop=focus")
        #expect(try SlotSpec.parse("48x48,fill,crop=attention").kind.crop == .attention)
        #expect(try SlotSpec.parse("48x48,fill,crop=center").kind.crop == .centre)
        #expect(try SlotSpec.parse("48x48,fill").kind.crop == .centre)
        for bad in ["48x48,fill,crop=", "48x48,fill,crop=smart", "48x48,fit,crop=focus", "48x48,crop=attention"] {
            #expect(throws: SlotSpecError.self, "\(bad)") { try SlotSpec.parse(bad) }
        }
    }

    @Test("crop rectangles read back from the index's text; anything else is unknown, not a trap")
    func cropText() {
        let crop = CropRectangle(x: 300.5, y: 0, width: 1200, height: 1200)
        #expect(CropRectangle(indexText: crop.indexText) == crop)
        for bad in ["", "1,2,3", "1,2,3,4,5", "a,b,c,d", "1,2,nan,4", "1,2,inf,4", "-1,2,3,4", "1,,3,4", String(repeating: "9", count: 400) + ",1,1,1"] {
            #expect(CropRectangle(indexText: bad) == nil, "\(bad)")
        }
    }
}
