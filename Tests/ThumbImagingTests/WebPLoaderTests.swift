import Foundation
import Testing
@testable import ThumbImaging

/// The WebP loader's own behaviour: scaled decoding, cancellation between input slices, limits
/// from the header, truncated and damaged files.
@Suite("WebP loader")
struct WebPLoaderTests {
    /// A loader that records what the thumbnailer asked and got, and can refuse to scale.
    final class SpyLoader: FrameLoader {
        let inner: WebPLoader
        let scales: Bool
        var askedShrink: Double?
        var loadedSize: (width: Int, height: Int)?
        init(_ inner: WebPLoader, scales: Bool) {
            self.inner = inner
            self.scales = scales
        }
        var storedWidth: Int { inner.storedWidth }
        var storedHeight: Int { inner.storedHeight }
        var orientation: Orientation { inner.orientation }
        func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
            askedShrink = maxShrink
            let frame = try inner.load(maxShrink: scales ? maxShrink : 1, isCancelled: isCancelled)
            loadedSize = (frame.pixels.width, frame.pixels.height)
            return frame
        }
    }

    static func render(_ path: String, _ slot: String, scales: Bool) throws -> (PixelBuffer, SpyLoader) {
        let spy = SpyLoader(try WebPLoader(source: loadSource(path), limits: ImageLimits()), scales: scales)
        let request = try Sample.request(slot, format: .png)
        let decoded = try Thumbnailer().renderFrame(spy, requests: [request], isCancelled: nil)
        return (decoded[0].pixels, spy)
    }

    /// 4000x3000 → large (256x192): the plan allows 7.8 (15.6 / margin 2); libwebp decodes ~512x384
    /// instead of 12 MP. Against the full decode, the thumbnail's mean abs difference measured
    /// 0.64 for large, 0.23 for product-grid@3x and 0.74 for contact-avatar@3x (bound 2).
    @Test("a 4000x3000 WebP is decoded scaled by libwebp, and the thumbnail stays close to a full decode",
          arguments: WebPTests.kinds)
    func scaledDecode(_ slot: String) throws {
        let path = try WebPFixtures.largeLossy()
        let (scaled, spy) = try Self.render(path, slot, scales: true)
        let (full, fullSpy) = try Self.render(path, slot, scales: false)
        let shrink = try #require(spy.askedShrink)
        let size = try #require(spy.loadedSize)
        #expect(shrink >= 2, "\(slot): the plan allowed only \(shrink)")
        #expect(size.width == Int((4000 / shrink).rounded(.up)) && size.height == Int((3000 / shrink).rounded(.up)),
                "\(slot): loaded \(size) for a shrink of \(shrink)")
        #expect(size.width * size.height * 4 < 4000 * 3000, "\(slot): loaded \(size), not a reduced frame")
        #expect(fullSpy.loadedSize.map { $0 == (4000, 3000) } == true)
        try #require(scaled.width == full.width && scaled.height == full.height)
        let error = Pixels.meanAbsoluteError(scaled.bytes, channelsA: scaled.channels, full.bytes, channelsB: full.channels)
        #expect(error < 2, "\(slot): the scaled decode's thumbnail is \(error) from the full decode's")
    }

    @Test("the scaled size is the least that keeps stored/maxShrink on each axis, and never distorts a thin image")
    func scaledSizes() throws {
        let loader = try WebPLoader(source: loadSource(try WebPFixtures.largeLossy()), limits: ImageLimits())
        #expect(loader.loadedSize(maxShrink: 1) == (4000, 3000))
        #expect(loader.loadedSize(maxShrink: 0.5) == (4000, 3000))
        #expect(loader.loadedSize(maxShrink: .nan) == (4000, 3000))
        #expect(loader.loadedSize(maxShrink: 8) == (500, 375))
        #expect(loader.loadedSize(maxShrink: 7.3) == (548, 411))
        // 3000 px / 100 px: a shorter side is not scaled below 100 px (rounding would skew it).
        #expect(loader.loadedSize(maxShrink: 1000) == (134, 100))
        let frame = try loader.load(maxShrink: 7.3, isCancelled: nil)
        #expect(frame.pixels.width == 548 && frame.pixels.height == 411 && frame.pixels.channels == 3)
    }

    /// libwebp's RGB rescaler works on straight (not premultiplied) lossy samples, so colour under
    /// transparent pixels can bleed into edges; measured against the full decode: premultiplied
    /// colour 0.41 (lossy), 0.43 (lossless), alpha 0.03 for both (bounds 2 and 1).
    @Test("lossless and lossy WebPs with alpha scale on load, keeping their transparency close to a full decode",
          arguments: ["lossless", "lossy"])
    func scaledAlpha(_ kind: String) throws {
        let path = try kind == "lossless" ? WebPFixtures.largeLosslessAlpha() : WebPFixtures.largeLossyAlpha()
        let (scaled, spy) = try Self.render(path, "large", scales: true)
        let (full, _) = try Self.render(path, "large", scales: false)
        let size = try #require(spy.loadedSize)
        #expect(size.width < 1600 && scaled.channels == 4 && scaled.hasTransparency)
        try #require(scaled.width == full.width && scaled.height == full.height)
        let reference = full.bytes.enumerated().map { $0.offset % 4 == 3 ? $0.element : UInt8(Int($0.element) * Int(full.bytes[$0.offset | 3]) / 255) }
        let premultiplied = scaled.bytes.enumerated().map { $0.offset % 4 == 3 ? $0.element : UInt8(Int($0.element) * Int(scaled.bytes[$0.offset | 3]) / 255) }
        let colour = Pixels.meanAbsoluteError(premultiplied, channelsA: 4, reference, channelsB: 4)
        let alpha = WebPFixtures.alphaError(scaled, full.bytes)
        #expect(colour < 2 && alpha < 1, "\(kind): premultiplied colour \(colour), alpha \(alpha) from the full decode")
    }
}
