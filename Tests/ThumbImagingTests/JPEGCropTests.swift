import Foundation
import Testing
@testable import ThumbImaging

/// Fill crops decode only the columns their Lanczos taps read (libjpeg-turbo's jpeg_crop_scanline):
/// the same pixels as decoding every column, for every JPEG of the corpus and the generated
/// progressive files (4:2:0, 4:2:2, 4:4:0, 4:4:4, gray, CMYK, restarts).
@Suite("JPEG column crop")
struct JPEGCropTests {
    static let kinds: [ThumbnailRequest] = {
        func fill(_ name: String, _ width: Double, _ height: Double) -> ThumbnailRequest {
            ThumbnailRequest(kind: SlotKind(name: name, widthPoints: width, heightPoints: height, scales: [1], mode: .fill,
                                            mask: .circle), scale: 1)
        }
        // The avatar; a small square (1/8 of most photos); a tall strip (crops hardest); a wide one
        // (crops nothing of a landscape photo); and `large` (a fit: no crop).
        return [try! Sample.request("contact-avatar@3x"), fill("dot", 24, 24), fill("strip", 30, 90), fill("banner", 90, 30),
                try! Sample.request("large")]
    }()

    static func files() throws -> [String] {
        try Manifest.with(status: "OK").filter { $0.format == "JPEG" && !$0.isHighPrecisionJPEG }.map(\.path)
    }

    static func check(_ bytes: [UInt8], _ name: String) throws {
        let source = SourceBytes(bytes)
        let thumbnailer = Thumbnailer()
        for request in kinds {
            let cropped = try thumbnailer.renderJPEG(source, requests: [request], isCancelled: nil)
            let whole = try thumbnailer.renderJPEG(source, requests: [request], isCancelled: nil, cropsColumns: false)
            #expect(cropped[0].pixels == whole[0].pixels, "\(name), \(request.kind.name)")
        }
        // All kinds from one decode, as a batch asks: `large` among them, so nothing is cropped.
        let batch = try thumbnailer.renderJPEG(source, requests: kinds, isCancelled: nil)
        let batchWhole = try thumbnailer.renderJPEG(source, requests: kinds, isCancelled: nil, cropsColumns: false)
        #expect(batch.map(\.pixels) == batchWhole.map(\.pixels), "\(name), batch")
    }

    @Test("every JPEG of the corpus: cropped thumbnails are the whole decode's", arguments: try files())
    func corpusFile(_ path: String) throws {
        try Self.check(ProgressiveFixtures.bytes(path), path)
    }

    @Test("generated progressive files: cropped thumbnails are the whole decode's", arguments: ProgressiveFixtures.generatedNames)
    func generatedFile(_ name: String) throws {
        try Self.check(try ProgressiveFixtures.generated(name), name)
    }

    @Test("the avatar of a 4:3 photo decodes about three quarters of the columns at 1/8")
    func avatarColumns() throws {
        let photo = try ProgressiveFixtures.generated("photo-12mp") // 4000x3000: 500x375 at 1/8
        let source = try JPEGRowSource(SourceBytes(photo), limits: ImageLimits(), isCancelled: nil)
        let thumbnailer = Thumbnailer()
        let (denominator, outputs) = thumbnailer.plan([try Sample.request("contact-avatar@3x")], storedWidth: source.storedWidth,
                                                      storedHeight: source.storedHeight, sourceOrientation: source.orientation,
                                                      allowsDCT: true)
        #expect(denominator == 8 && outputs[0].boxFactor == 1)
        let scaled = try source.start(LoadHint(dctDenominator: denominator))
        let shrink = Double(denominator)
        let resampler = RowResampler(sourceWidth: scaled.width, sourceHeight: scaled.height,
                                     region: Lanczos3.Region(outputs[0].geometry, shrinkFactorX: shrink, shrinkFactorY: shrink),
                                     outputWidth: 144, outputHeight: 144)
        let wanted = try #require(Thumbnailer.columnsToDecode(width: scaled.width, sinks: [.resample(resampler)]))
        let columns = try Thumbnailer.cropColumns(source, wanted, width: scaled.width, sinks: [.resample(resampler)])
        // The centred 375 columns, their taps and the margin, widened to whole iMCU columns.
        #expect(columns.count < scaled.width * 85 / 100 && columns.count >= 375, "\(columns) of \(scaled.width)")
        #expect(columns.lowerBound <= resampler.columnsRead.lowerBound && columns.upperBound >= resampler.columnsRead.upperBound)
    }
}
