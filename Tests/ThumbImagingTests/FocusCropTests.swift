import Foundation
import Testing
@testable import ThumbImaging

/// Focus crops: the crop's centre goes as near the focus as the image allows, and an off-centre
/// crop lands on the same displayed pixels under every EXIF orientation.
@Suite("Focus crops")
struct FocusCropTests {
    static let square = SlotKind(name: "focus-square", widthPoints: 100, heightPoints: 100, mode: .fill, crop: .focus)

    static func render(_ file: String, kind: SlotKind, focus: FocusRegion?) throws -> RenderedImage {
        let source = try loadSource(Paths.corpusFile("exif-orientation", file))
        return try Thumbnailer().render(source, request: ThumbnailRequest(kind: kind, scale: 1, encoder: EncoderSettings(),
                                                                          focus: focus))
    }

    @Test("the crop is centred on the focus, clamped inside the image")
    func placement() throws {
        let geometry = ThumbnailGeometry(sourceWidth: 1800, sourceHeight: 1200, slotWidth: 100, slotHeight: 100,
                                         mode: .fill, upscale: false)
        #expect(geometry.cropX == 300 && geometry.cropWidth == 1200)
        let left = geometry.placed(on: try #require(FocusRegion(x: 0.4, y: 0.5)))
        #expect(left.cropX == 120 && left.cropY == 0, "focus at 720 px: crop from 120, got \(left.cropX)")
        let edge = geometry.placed(on: try #require(FocusRegion(x: 0.05, y: 0.9)))
        #expect(edge.cropX == 0 && edge.cropY == 0, "a focus near the edge stops the crop at the edge")
        let far = geometry.placed(on: try #require(FocusRegion(x: 0.7, y: 0.2, width: 0.3, height: 0.1)))
        #expect(far.cropX == 600, "a region's centre (0.85) past the last position: crop at the far end, got \(far.cropX)")
    }

    /// Every orientation maps a rectangle to the stored frame and back to itself, and the stored
    /// rectangle holds the same pixels (checked on a hand-rotated index image).
    @Test("stored and displayed rectangles are inverse under every orientation", arguments: Orientation.allCases)
    func rectangleRoundTrip(_ orientation: Orientation) {
        let displayedWidth = 7, displayedHeight = 5
        let stored = orientation.displayedSize(width: displayedWidth, height: displayedHeight)
        let rectangle = CropRectangle(x: 1, y: 2, width: 3, height: 2)
        let inStored = orientation.storedRectangle(of: rectangle, displayedWidth: Double(displayedWidth),
                                                   displayedHeight: Double(displayedHeight))
        let back = orientation.displayedRectangle(of: inStored, storedWidth: Double(stored.width), storedHeight: Double(stored.height))
        #expect(back == rectangle, "\(orientation): \(rectangle) -> \(inStored) -> \(back)")
        // Each displayed pixel of the rectangle comes from a stored pixel inside the stored rectangle.
        for y in 2..<4 {
            for x in 1..<4 {
                let (sx, sy) = orientation.storedCoordinate(x: x, y: y, storedWidth: stored.width, storedHeight: stored.height)
                let inside = Double(sx) >= inStored.x && Double(sx) < inStored.x + inStored.width
                    && Double(sy) >= inStored.y && Double(sy) < inStored.y + inStored.height
                #expect(inside, "\(orientation): displayed (\(x), \(y)) is stored (\(sx), \(sy)), outside \(inStored)")
            }
        }
    }

    @Test("an off-centre focus crop shows the same displayed pixels under every orientation", arguments: 1...8)
    func orientations(_ orientation: Int) throws {
        let focus = try #require(FocusRegion(x: 0.2, y: 0.5))
        let reference = try Self.render("Landscape_1.jpg", kind: Self.square, focus: focus)
        let image = try Self.render("Landscape_\(orientation).jpg", kind: Self.square, focus: focus)
        // 1800 x 1200 displayed: the crop is 1200 wide, centred on 360 but clamped at 0.
        #expect(image.crop == CropRectangle(x: 0, y: 0, width: 1200, height: 1200), "Landscape_\(orientation): \(image.crop)")
        let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels,
                                             reference.pixels.bytes, channelsB: reference.pixels.channels)
        #expect(error < 8, "Landscape_\(orientation): mean abs difference \(error) from Landscape_1")
        // The comparison can tell crops apart: the centred crop of the same file is far off.
        let centred = try Self.render("Landscape_\(orientation).jpg", kind: SlotKind(name: "centre", widthPoints: 100,
                                                                                    heightPoints: 100, mode: .fill), focus: focus)
        #expect(centred.crop.x == 300)
        let centredError = Pixels.meanAbsoluteError(centred.pixels.bytes, channelsA: centred.pixels.channels,
                                                    reference.pixels.bytes, channelsB: reference.pixels.channels)
        #expect(centredError > 3 * max(error, 4), "centred crop differs by only \(centredError) (focus crop: \(error))")
    }

    @Test("a portrait source moves the crop vertically under every orientation", arguments: 1...8)
    func portraitOrientations(_ orientation: Int) throws {
        let kind = SlotKind(name: "wide", widthPoints: 120, heightPoints: 60, mode: .fill, crop: .focus)
        let focus = try #require(FocusRegion(x: 0.5, y: 0.8))
        let reference = try Self.render("Portrait_1.jpg", kind: kind, focus: focus)
        let image = try Self.render("Portrait_\(orientation).jpg", kind: kind, focus: focus)
        // 1200 x 1800 displayed, a 2:1 crop is 1200 x 600, centred on 1440: from 1140.
        #expect(image.crop == CropRectangle(x: 0, y: 1140, width: 1200, height: 600), "Portrait_\(orientation): \(image.crop)")
        let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels,
                                             reference.pixels.bytes, channelsB: reference.pixels.channels)
        #expect(error < 8, "Portrait_\(orientation): mean abs difference \(error) from Portrait_1")
    }

    @Test("centre and attention kinds ignore the focus; fit kinds have no crop to move")
    func otherModesIgnoreFocus() throws {
        let focus = try #require(FocusRegion(x: 0.1, y: 0.5))
        let centre = try Self.render("Landscape_1.jpg", kind: SlotKind(name: "c", widthPoints: 100, heightPoints: 100,
                                                                       mode: .fill, crop: .centre), focus: focus)
        #expect(centre.crop.x == 300)
        let fit = try Self.render("Landscape_1.jpg", kind: SlotKind(name: "f", widthPoints: 100, heightPoints: 100,
                                                                    mode: .fit, crop: .focus), focus: focus)
        #expect(fit.crop == CropRectangle(x: 0, y: 0, width: 1800, height: 1200))
        let attention = try Self.render("Landscape_1.jpg", kind: SlotKind(name: "a", widthPoints: 100, heightPoints: 100,
                                                                          mode: .fill, crop: .attention), focus: focus)
        let attentionWithout = try Self.render("Landscape_1.jpg", kind: SlotKind(name: "a", widthPoints: 100, heightPoints: 100,
                                                                                 mode: .fill, crop: .attention), focus: nil)
        #expect(attention.crop == attentionWithout.crop)
        let focusWithout = try Self.render("Landscape_1.jpg", kind: Self.square, focus: nil)
        #expect(focusWithout.crop == attentionWithout.crop, "a focus kind without a focus crops as attention")
    }
}
