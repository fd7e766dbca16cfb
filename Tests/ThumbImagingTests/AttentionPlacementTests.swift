import Foundation
import Testing
@testable import ThumbImaging

/// Attention placements (`AttentionPlacement`): the decode that places an attention crop says
/// where, and a later render of the same version handed that place crops there as a centred crop
/// would be cropped (no kept frame, no saliency map: a JPEG decodes only the crop's columns).
@Suite("Attention placements")
struct AttentionPlacementTests {
    static let assets = Paths.packageRoot + "/Samples/assets/"

    static func kind(_ name: String, _ width: Double, _ height: Double, mask: SlotKind.Mask = .circle,
                     crop: SlotKind.CropMode = .attention) -> SlotKind {
        SlotKind(name: name, widthPoints: width, heightPoints: height, scales: [1, 2, 3], mode: .fill, mask: mask, crop: crop)
    }

    static func requests() -> [ThumbnailRequest] {
        [ThumbnailRequest(kind: kind("avatar", 48, 48), scale: 2), ThumbnailRequest(kind: kind("avatar", 48, 48), scale: 3),
         ThumbnailRequest(kind: kind("strip", 30, 90, mask: .cornerRadius(points: 6)), scale: 2)]
    }

    static func closeEnough(_ a: CropRectangle, _ b: CropRectangle) -> Bool {
        abs(a.x - b.x) <= 0.5 && abs(a.y - b.y) <= 0.5 && abs(a.width - b.width) <= 0.5 && abs(a.height - b.height) <= 0.5
    }

    @Test("a render handed its placement crops where attention placed it, and places nothing again",
          arguments: ["portrait-exif8.jpg", "landscape-exif6.jpg", "p3-color-ring-alpha.png"])
    func placedCentreReproducesTheCrop(_ name: String) throws {
        let source = try loadSource(Self.assets + name)
        let thumbnailer = Thumbnailer()
        for request in Self.requests() {
            let first = try thumbnailer.thumbnailSet(of: source, requests: [request], placeholder: .skip)
            guard let placement = first.placements.first else {
                // Only a crop with no freedom (the image already the slot's shape) has nothing to place.
                let centred = try thumbnailer.render(source, request: { var r = request; r.kind.crop = .centre; return r }())
                #expect(first.thumbnails[0].crop == centred.crop && centred.crop.width == Double(centred.sourceWidth)
                        && centred.crop.height == Double(centred.sourceHeight), "\(name) \(request.kind.name): no placement")
                continue
            }
            #expect(first.placements.count == 1 && placement.shape == request.placementShape)
            var again = request
            again.placedCentre = placement.centre
            let second = try thumbnailer.thumbnailSet(of: source, requests: [again], placeholder: .skip)
            #expect(second.placements.isEmpty, "\(name): placed again")
            #expect(Self.closeEnough(second.thumbnails[0].crop, first.thumbnails[0].crop),
                    "\(name) \(request.kind.name)@\(request.scale)x: \(second.thumbnails[0].crop) against \(first.thumbnails[0].crop)")
        }
    }

    @Test("a placed JPEG crop is planned as a centred one: no saliency map, so only the crop's columns are decoded")
    func placedCropIsPlannedWithoutTheFrame() throws {
        let source = try loadSource(Self.assets + "portrait-exif8.jpg")
        let thumbnailer = Thumbnailer()
        let request = Self.requests()[1]
        let placement = try #require(try thumbnailer.thumbnailSet(of: source, requests: [request], placeholder: .skip)
            .placements.first)
        var placed = request
        placed.placedCentre = placement.centre
        let decoder = try JPEGDecoder(source: source, limits: ImageLimits())
        func plan(_ request: ThumbnailRequest) -> Thumbnailer.OutputPlan {
            thumbnailer.plan([request], storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                             sourceOrientation: decoder.orientation, allowsDCT: true).outputs[0]
        }
        #expect(plan(request).attention != nil && plan(placed).attention == nil)
        var centred = request
        centred.kind.crop = .centre
        #expect(plan(placed).geometry.cropRectangle != plan(centred).geometry.cropRectangle,
                "attention chose the centre of this photo: the test proves nothing with it")
    }

    @Test("nothing is placed for a centred crop, a fit, a focus crop with a focus, or an attention crop the memory limit centred")
    func noPlacementWithoutAttention() throws {
        let source = try loadSource(Self.assets + "portrait-exif8.jpg")
        let thumbnailer = Thumbnailer()
        let focus = FocusRegion(x: 0.3, y: 0.2)
        let unplaced = [ThumbnailRequest(kind: Self.kind("c", 48, 48, crop: .centre), scale: 3),
                        ThumbnailRequest(kind: SlotKind(name: "f", widthPoints: 48, heightPoints: 48, mode: .fit, crop: .attention), scale: 3),
                        ThumbnailRequest(kind: Self.kind("focus", 48, 48, crop: .focus), scale: 3, focus: focus)]
        for request in unplaced {
            #expect(request.placementShape == nil)
            #expect(try thumbnailer.thumbnailSet(of: source, requests: [request], placeholder: .skip).placements.isEmpty)
        }
        // A focus kind without a focus is cropped by attention, and placed.
        let fallback = ThumbnailRequest(kind: Self.kind("focus", 48, 48, crop: .focus), scale: 3)
        #expect(try thumbnailer.thumbnailSet(of: source, requests: [fallback], placeholder: .skip).placements.count == 1)
        var limits = ImageLimits()
        limits.maxDecoderMemoryBytes = 64 << 10
        let limited = try Thumbnailer(limits: limits).thumbnailSet(of: source, requests: [Self.requests()[1]], placeholder: .skip)
        #expect(limited.placements.isEmpty, "a crop centred for want of memory is not where attention would place it")
    }

    @Test("shapes follow pixels, mask, orientation and upscale, not names; one placement a shape a decode")
    func shapes() throws {
        let requests = Self.requests()
        #expect(requests[0].placementShape == "a1:96x96c" && requests[1].placementShape == "a1:144x144c")
        #expect(requests[2].placementShape == "a1:60x180r120")
        var renamed = requests[0]
        renamed.kind.name = "other"
        #expect(renamed.placementShape == requests[0].placementShape)
        var square = requests[0]
        square.kind.mask = .none
        #expect(square.placementShape == "a1:96x96")
        // Placed in the stored frame (not turned upright), or with a mask sized for a small source.
        var stored = requests[0]
        stored.appliesOrientation = false
        var enlarged = requests[0]
        enlarged.kind.upscale = true
        #expect(stored.placementShape == "a1:96x96cn" && enlarged.placementShape == "a1:96x96cu")
        let source = try loadSource(Self.assets + "portrait-exif8.jpg")
        let set = try Thumbnailer().thumbnailSet(of: source, requests: [requests[0], renamed, requests[1], stored],
                                                 placeholder: .skip)
        #expect(set.placements.map(\.shape) == ["a1:96x96c", "a1:144x144c", "a1:96x96cn"])
        // portrait-exif8 is stored turned: the same crop is a different fraction of each frame.
        #expect(set.placements[0].centre != set.placements[2].centre)
    }
}
