import Foundation
import Testing
@testable import ThumbImaging

/// `PlaceholderDemand.ifWholeFrame`, what a client's render asks: the placeholder comes from a
/// decode that reads every column anyway, never at the cost of a JPEG's column crop.
@Suite struct PlaceholderDemandTests {
    /// 3264x2448: a square fill crop leaves a quarter of the columns unread.
    static let photo = "large-photos/exif-samples__hdr_iphone_hdr_YES.jpg"

    static func set(_ path: String, _ requests: [ThumbnailRequest], _ demand: PlaceholderDemand) throws -> ThumbnailSet {
        try Thumbnailer().thumbnailSet(of: try loadSource(Paths.corpus + "/" + path), requests: requests, placeholder: demand)
    }

    static func fill(_ crop: SlotKind.CropMode) -> ThumbnailRequest {
        var kind = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: .fill, mask: .circle)
        kind.crop = crop
        return ThumbnailRequest(kind: kind, scale: 3)
    }

    @Test("a JPEG fill crop whose decode can skip columns skips them and leaves the placeholder out; asked always, it has one")
    func croppableDecodeLeavesItOut() throws {
        let request = Self.fill(.centre)
        // The premise: without the placeholder this decode reads only the crop's columns.
        let decoder = try JPEGDecoder(source: try loadSource(Paths.corpus + "/" + Self.photo), limits: ImageLimits())
        let (denominator, outputs) = Thumbnailer().plan([request], storedWidth: decoder.storedWidth, storedHeight: decoder.storedHeight,
                                                        sourceOrientation: decoder.orientation, allowsDCT: true)
        let scaled = try decoder.start(scaleDenominator: denominator)
        let shrink = Double(denominator)
        let resampler = RowResampler(sourceWidth: scaled.width, sourceHeight: scaled.height,
                                     region: Lanczos3.Region(outputs[0].geometry, shrinkFactorX: shrink, shrinkFactorY: shrink),
                                     outputWidth: outputs[0].geometry.outputWidth, outputHeight: outputs[0].geometry.outputHeight)
        #expect(outputs[0].boxFactor == 1 && Thumbnailer.columnsToDecode(width: scaled.width, sinks: [.resample(resampler)]) != nil)

        let client = try Self.set(Self.photo, [request], .ifWholeFrame)
        let background = try Self.set(Self.photo, [request], .always)
        #expect(client.placeholder == nil)
        #expect(background.placeholder != nil)
        #expect(client.thumbnails.map(\.bytes) == background.thumbnails.map(\.bytes))
        // A placed attention crop decodes only its columns too.
        var placed = Self.fill(.attention)
        placed.placedCentre = FocusRegion(x: 0.3, y: 0.5)
        #expect(try Self.set(Self.photo, [placed], .ifWholeFrame).placeholder == nil)
    }

    @Test("a decode that reads the whole frame anyway computes it: an unplaced attention crop, a fit, a PNG, a pre-render with a block shrink")
    func wholeFrameDecodeComputesIt() throws {
        var fit = Self.fill(.centre)
        fit.kind.mode = .fit
        let grid = ThumbnailRequest(kind: SlotKind(name: "grid", widthPoints: 128, heightPoints: 128, scales: [3], mode: .fill), scale: 3)
        for requests in [[Self.fill(.attention)], [fit], [Self.fill(.centre), ThumbnailRequest(kind: Self.fill(.centre).kind, scale: 2), grid]] {
            // Each from its own decode's frame (the DCT scale follows the requests).
            let client = try Self.set(Self.photo, requests, .ifWholeFrame).placeholder
            let background = try Self.set(Self.photo, requests, .always).placeholder
            #expect(client != nil && client == background,
                    "\(requests.map { "\($0.kind.mode) \($0.kind.crop)@\($0.scale)" })")
        }
        let png = "libpng-testpngs/rgb-alpha-8.png"
        #expect(try Self.set(png, [Self.fill(.centre)], .ifWholeFrame).placeholder == Self.set(png, [Self.fill(.centre)], .always).placeholder)
        #expect(try Self.set(png, [Self.fill(.centre)], .ifWholeFrame).placeholder != nil)
    }
}
