import Foundation
import Synchronization
import Testing
@testable import ThumbImaging

/// Built colour transforms are kept and shared between workers: same object for the same
/// profile and layout, and the same pixels from many threads at once as from a fresh one.
@Suite("Colour transform cache")
struct ColorTransformCacheTests {
    /// Adobe RGB (1998), embedded in a real photo.
    static func profile() throws -> [UInt8] {
        let source = try loadSource(Paths.corpusFile("edge-cases", "imagor/jpg-24bit-icc-adobe-rgb.jpg"))
        return try #require(try JPEGDecoder(source: source, limits: ImageLimits()).iccProfile())
    }

    @Test("one transform per profile and layout")
    func sharedPerKey() throws {
        let profile = try Self.profile()
        let rgb = try #require(ColorProfileTransform.shared(profile: profile, layout: .rgb))
        #expect(ColorProfileTransform.shared(profile: profile, layout: .rgb) === rgb)
        let rgba = try #require(ColorProfileTransform.shared(profile: profile, layout: .rgba))
        #expect(rgba !== rgb)
        // An RGB profile cannot describe CMYK pixels: no transform, cached or not.
        #expect(ColorProfileTransform.shared(profile: profile, layout: .cmyk) == nil)
    }

    @Test("a shared transform gives a fresh one's pixels, used from many threads at once")
    func concurrentUse() throws {
        let profile = try Self.profile()
        let shared = try #require(ColorProfileTransform.shared(profile: profile, layout: .rgb))
        let fresh = try #require(ColorProfileTransform(profile: profile, layout: .rgb))
        // Every 8-bit level on each channel, and runs of equal pixels (what lcms's memo would skip).
        let pixelCount = 64 * 1024
        let input = (0..<pixelCount).flatMap { i -> [UInt8] in
            [UInt8(truncatingIfNeeded: i), UInt8(truncatingIfNeeded: i >> 8), UInt8(truncatingIfNeeded: (i / 3) * 7)]
        }
        var serial = PixelBuffer(width: pixelCount, height: 1, channels: 3, bytes: input)
        fresh.apply(to: &serial)
        let expected = serial
        #expect(expected.bytes != input, "Adobe RGB to sRGB must change some pixels")
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            var image = PixelBuffer(width: pixelCount, height: 1, channels: 3, bytes: input)
            shared.apply(to: &image)
            if image != expected { mismatches.withLock { $0 += 1 } }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }
}
