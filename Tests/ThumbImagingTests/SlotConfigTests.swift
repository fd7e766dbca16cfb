import Foundation
import Testing
import ThumbConfiguration
import ThumbImaging

/// Slot specs, the sample config, `thumbd slots`, config errors and the circle/rounded masks.
@Suite("Slots and config")
struct SlotConfigTests {
    @Test("inline specs parse", arguments: [
        ("48x48@3x,fill,circle", 144, 144, SlotKind.ContentMode.fill, SlotKind.Mask.circle),
        ("256x256,fit", 256, 256, .fit, .none),
        ("56x56@2x,fill,radius=8", 112, 112, .fill, .cornerRadius(points: 8)),
        ("200x180@2x", 400, 360, .fit, .none),
        ("12.5x10@4x,fill", 50, 40, .fill, .none),
    ])
    func goodSpec(_ text: String, _ width: Int, _ height: Int, _ mode: SlotKind.ContentMode, _ mask: SlotKind.Mask) throws {
        let selection = try SlotSpec.parse(text)
        let scale = selection.scale ?? 1
        let size = selection.kind.pixelSize(scale: scale)
        #expect(size.width == width && size.height == height, "\(text): \(size)")
        #expect(selection.kind.mode == mode)
        #expect(selection.kind.mask == mask)
        // The catalog resolves inline specs too.
        #expect(try ThumbConfig.builtIn.catalog.resolve(text) == selection)
    }

    @Test("bad inline specs fail and name the spec",
          arguments: ["48x", "x48", "48x48@5x", "48x48@0x", "48x48,sideways", "48x48,radius=-1", "0x48", "9000x10@1x",
                      "48x48@3x,fill,", "-4x4", "nanxnan", "infx3"])
    func badSpec(_ text: String) {
        do {
            let parsed = try SlotSpec.parse(text)
            Issue.record("\(text): parsed as \(parsed)")
        } catch {
            #expect(error.text == text)
            #expect(error.description.contains(text) && !error.reason.isEmpty, "\(error)")
        }
    }

    @Test("the sample config: grid item width and pixel sizes")
    func sampleConfig() throws {
        let config = try ThumbConfig.load(path: Paths.sampleConfig)
        let layout = GridLayout(columns: 2, containerWidth: 390, leadingInset: 16, trailingInset: 16, interItemSpacing: 12)
        #expect(layout.itemWidth == 173)
        let grid = try config.catalog.resolve("product-grid@3x")
        #expect(grid.kind.widthPoints == 173 && grid.kind.heightPoints == 100)
        #expect(grid.kind.pixelSize(scale: 3) == (519, 300))
        let sizes: [(String, Int, Int)] = [("contact-avatar@2x", 96, 96), ("contact-avatar@3x", 144, 144),
                                           ("product-row@3x", 168, 168), ("carousel-card@2x", 400, 360),
                                           ("normal", 128, 128), ("xx-large", 1024, 1024)]
        for (name, w, h) in sizes {
            let selection = try config.catalog.resolve(name)
            let size = selection.kind.pixelSize(scale: selection.scale ?? selection.kind.scales[0])
            #expect(size == (w, h), "\(name): \(size)")
        }
        #expect(throws: SlotSpecError.self) { try config.catalog.resolve("contact-avatar@7x") }
        #expect(throws: SlotSpecError.self) { try config.catalog.resolve("no-such-kind") }
        #expect(config.catalog.kinds["contact-avatar"]?.scales == [2, 3])
        #expect(config.catalog.kinds["product-row"]?.mask == .cornerRadius(points: 8))
    }

    @Test("thumbd slots lists every kind with its pixel sizes")
    func slotsCommand() throws {
        let result = try MeasuredChild.run(try requireThumbd(), ["slots", "--config", Paths.sampleConfig])
        #expect(result.exitCode == 0, "\(result.summary)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let expected: [(String, [String])] = [
            ("contact-avatar", ["96x96", "144x144", "circle"]), ("product-row", ["112x112", "168x168"]),
            ("product-grid", ["519x300", "173x100"]), ("carousel-card", ["400x360"]), ("normal", ["128x128"]),
            ("large", ["256x256"]), ("x-large", ["512x512"]), ("xx-large", ["1024x1024"]),
        ]
        for (name, parts) in expected {
            let line = lines.first { $0.hasPrefix(name + ":") }
            #expect(line != nil, "no line for \(name) in: \(result.stdout)")
            for part in parts { #expect(line?.contains(part) == true, "\(name): '\(line ?? "")' lacks \(part)") }
        }
        let builtIn = try MeasuredChild.run(try requireThumbd(), ["slots"])
        #expect(builtIn.exitCode == 0 && builtIn.stdout.contains("256x256") && builtIn.stdout.contains("1024x1024"))
    }

    @Test("the slot table's bounds and idle time are config keys of the server")
    func slotKeys() throws {
        let json = #"{"kinds": {}, "server": {"maxSlots": 5000, "maxSlotTableBytes": 1048576, "slotIdleSeconds": 30}}"#
        let config = try ThumbConfig.parse(Data(json.utf8), file: "test.json", relativeTo: "/tmp")
        #expect(config.service.maxSlots == 5000 && config.service.maxSlotTableBytes == 1 << 20 && config.service.slotIdleSeconds == 30)
        #expect(ThumbConfig.builtIn.service.maxSlots == 100_000 && ThumbConfig.builtIn.service.slotIdleSeconds == 600)
    }

    @Test("config errors name the key", arguments: [
        (#"{"kinds": {"avatar": {"width": 0, "height": 48}}}"#, "kinds.avatar.width"),
        (#"{"kinds": {"avatar": {"width": "wide", "height": 48}}}"#, "kinds.avatar.width"),
        (#"{"kinds": {"avatar": {"height": 48}}}"#, "kinds.avatar.width"),
        (#"{"kinds": {"avatar": {"width": 48, "height": 48, "size": 3}}}"#, "kinds.avatar.size"),
        (#"{"kinds": {"avatar": {"width": 48, "height": 48, "scales": [5]}}}"#, "kinds.avatar.scales"),
        (#"{"kinds": {"avatar": {"width": 48, "height": 48, "mode": "stretch"}}}"#, "kinds.avatar.mode"),
        (#"{"kinds": {}, "colour": true}"#, "colour"),
        (#"{"kinds": {"g": {"grid": {"columns": 2}, "height": 10}}}"#, "kinds.g.grid.containerWidth"),
        (#"{"kinds": {}, "encoding": {"jpegQuality": 101}}"#, "encoding.jpegQuality"),
        (#"{"kinds": {}, "limits": {"maxPixels": 1.5}}"#, "limits.maxPixels"),
        (#"{"kinds": {}, "server": {"maxSlots": 0}}"#, "server.maxSlots"),
        (#"{"kinds": {}, "server": {"slotIdleSeconds": 1e9}}"#, "server.slotIdleSeconds"),
        (#"{"kinds": {}, "server": {"maxSlotTableBytes": 100}}"#, "server.maxSlotTableBytes"),
    ])
    func configError(_ json: String, _ key: String) {
        do {
            _ = try ThumbConfig.parse(Data(json.utf8), file: "test.json", relativeTo: "/tmp")
            Issue.record("\(json): accepted")
        } catch {
            #expect(error.key == key, "\(json): key '\(error.key)', expected '\(key)' (\(error.reason))")
            #expect(error.description.contains(key) && error.description.contains("test.json"), "\(error)")
        }
    }

    /// A white opaque square source rendered through a mask kind.
    static func masked(_ spec: String) throws -> PixelBuffer {
        let row = [UInt8](repeating: 255, count: 300 * 3)
        let source = SourceBytes(PNGBuilder.png(width: 300, height: 300, bitDepth: 8, colorType: 2,
                                                rows: [[UInt8]](repeating: row, count: 300)))
        let selection = try SlotSpec.parse(spec)
        return try Thumbnailer().render(source, request: ThumbnailRequest(kind: selection.kind, scale: selection.scale ?? 1)).pixels
    }

    @Test("circle mask: corners transparent, centre opaque, anti-aliased edge")
    func circleMask() throws {
        let image = try Self.masked("48x48@3x,fill,circle")
        try #require(image.channels == 4 && image.width == 144 && image.height == 144)
        let n = image.width
        for (x, y) in [(0, 0), (n - 1, 0), (0, n - 1), (n - 1, n - 1), (10, 10)] {
            #expect(Pixels.rgb(image, x: x, y: y).a == 0, "corner (\(x), \(y)) alpha \(Pixels.rgb(image, x: x, y: y).a)")
        }
        for (x, y) in [(72, 72), (71, 71), (72, 5), (5, 72), (72, 138)] {
            #expect(Pixels.rgb(image, x: x, y: y).a == 255, "inside (\(x), \(y)) alpha \(Pixels.rgb(image, x: x, y: y).a)")
        }
        // The rim is anti-aliased: about one ring of partially transparent pixels (circumference
        // 2π·72 ≈ 452 px), 
        var partial = 0
        for y in 0..<n { for x in 0..<n { let a = Pixels.rgb(image, x: x, y: y).a; if a > 0 && a < 255 { partial += 1 } } }
        #expect(partial > 300 && partial < 1000, "\(partial) partially transparent pixels")
        // Near 45°, the rim steps through intermediate alphas (not a hard 0 → 255 jump).
        let ring = (0..<40).map { Pixels.rgb(image, x: $0, y: 30).a }
        #expect(ring.contains { $0 > 0 && $0 < 255 }, "row 30: \(ring)")
        // Symmetric: the mask is centred.
        for y in 0..<n { for x in 0..<(n / 2) {
            let a = Pixels.rgb(image, x: x, y: y).a, b = Pixels.rgb(image, x: n - 1 - x, y: y).a
            if a != b { Issue.record("asymmetric alpha at (\(x), \(y)): \(a) vs \(b)"); return }
        } }
        // The colour stays white where visible.
        #expect(Pixels.rgb(image, x: 72, y: 72).r == 255)
    }

    @Test("rounded corners: corner transparent, edges opaque, anti-aliased arc")
    func roundedCorners() throws {
        let image = try Self.masked("56x56@3x,fill,radius=8")
        try #require(image.channels == 4 && image.width == 168)
        let n = image.width, r = 24
        #expect(Pixels.rgb(image, x: 0, y: 0).a == 0 && Pixels.rgb(image, x: n - 1, y: n - 1).a == 0)
        #expect(Pixels.rgb(image, x: n / 2, y: 0).a == 255 && Pixels.rgb(image, x: 0, y: n / 2).a == 255)
        #expect(Pixels.rgb(image, x: r, y: r).a == 255)
        // The arc is anti-aliased: partially transparent pixels inside the corner square only,
        // roughly a quarter circumference (π·24/2 ≈ 38) per corner.
        var partial = 0, outside = 0
        for y in 0..<n { for x in 0..<n {
            let a = Pixels.rgb(image, x: x, y: y).a
            guard a > 0 && a < 255 else { continue }
            let inCorner = (x < r || x >= n - r) && (y < r || y >= n - r)
            if inCorner { partial += 1 } else { outside += 1 }
        } }
        #expect(partial > 4 * 25 && partial < 4 * 80, "\(partial) partially transparent pixels in the corners")
        #expect(outside == 0, "\(outside) partially transparent pixels outside the corners")
        // The straight edges are untouched beyond the corner radius.
        #expect((r..<(n - r)).allSatisfy { Pixels.rgb(image, x: $0, y: 0).a == 255 })
    }
}
