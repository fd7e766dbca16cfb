import Foundation
import Testing
@testable import ThumbImaging

/// AVIF output: Pillow (its own AVIF plugin, libavif) opens it at the reported size, and it
/// decodes back close to what was encoded, alpha included.
@Suite("AVIF encoder")
struct AVIFEncoderTests {
    @Test(arguments: [(145, 97, 3), (144, 144, 4), (1, 1, 3), (57, 200, 4)])
    func pillowOpensItAtTheReportedSize(_ size: (Int, Int, Int)) throws {
        var pixels = HEIFThumbnailTests.gradient(width: size.0, height: size.1, seed: 3)
        if size.2 == 4 {
            pixels = pixels.withAlpha()
            for index in stride(from: 3, to: pixels.bytes.count, by: 4) where (index / 4) % pixels.width < pixels.width / 2 {
                pixels.bytes[index] = 90
            }
        }
        var settings = EncoderSettings()
        settings.format = .avif
        let bytes = try ImageEncoder.encode(pixels, as: .avif, settings: settings)
        #expect(ManifestWalkTests.hasSignature(bytes, of: .avif))
        let seen = try Python.pillowSize(of: bytes)
        #expect(seen.width == size.0 && seen.height == size.1 && seen.format == "AVIF", "\(seen)")
        // And back through thumbd's own loader: the same size, alpha kept, pixels close.
        let loader = try HEIFLoader(source: SourceBytes(bytes), format: .avif, limits: ImageLimits())
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.width == size.0 && frame.pixels.height == size.1 && frame.pixels.channels == size.2)
        #expect(frame.iccProfile == nil, "tagged sRGB (nclx 1/13/6)")
        let error = Pixels.meanAbsoluteError(frame.pixels.bytes, channelsA: frame.pixels.channels, pixels.bytes,
                                             channelsB: pixels.channels)
        #expect(error < 8, "round trip mean error \(error)")
        if size.2 == 4 && size.0 > 1 {
            #expect(abs(Int(frame.pixels.bytes[3]) - 90) <= 6 && frame.pixels.bytes[frame.pixels.bytes.count - 1] >= 248)
        }
    }

    /// Through the thumbnailer with `format: avif`, a HEIC in and an AVIF out.
    @Test func thumbnailAsAVIF() throws {
        let source = try loadSource(try HEIFCorpus.file("pillow_heif__xiaomi.heic").path)
        let thumbnail = try Thumbnailer().thumbnail(of: source, request: Sample.request("product-grid@3x", format: .avif))
        #expect(thumbnail.format == .avif && thumbnail.width == 400 && thumbnail.height == 300)
        let seen = try Python.pillowSize(of: thumbnail.bytes)
        #expect(seen.width == 400 && seen.height == 300 && seen.format == "AVIF")
    }

    @Test func cancelledBeforeEncoding() {
        #expect(throws: ImagingError.cancelled) {
            _ = try AVIFEncoder.encode(PixelBuffer(width: 8, height: 8, channels: 3), settings: EncoderSettings(), isCancelled: { true })
        }
    }
}
