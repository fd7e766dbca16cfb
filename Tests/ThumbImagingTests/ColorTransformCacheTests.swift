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

/// A profile lcms has not built before costs one uninterruptible call (~50 ms of CPU for the
/// half-MB CMYK profile of `ycck.jpg`): a cancel that comes meanwhile must not wait for it.
@Suite("Colour transform builds and cancellation")
struct ColorTransformBuildCancellationTests {
    static let ycckPath = Paths.corpusFile("edge-cases", "jpeg-decoder/tests/reftest/images/ycck.jpg")

    /// `ycck.jpg` with its embedded profile made new to this process: a byte of the profile
    /// header's creation time (which lcms does not read) changed, so the cache cannot know it.
    static func freshProfileSource(_ salt: UInt8) throws -> SourceBytes {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: ycckPath)))
        let marker = Array("ICC_PROFILE\0".utf8)
        let at = try #require((0...(bytes.count - marker.count)).first { bytes[$0..<($0 + marker.count)].elementsEqual(marker) })
        // APP2 payload: "ICC_PROFILE\0", sequence number, count, then the profile; byte 35 is
        // the low byte of the header's creation seconds.
        let creationSecond = at + marker.count + 2 + 35
        bytes[creationSecond] = bytes[creationSecond] &+ salt &+ UInt8(truncatingIfNeeded: getpid())
        return SourceBytes(bytes)
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    @Test("a render cancelled while a new profile's transform is built stops at once; the build is kept")
    func cancelDuringBuild() throws {
        // Premise: building this profile's transform is long enough to tell the two apart.
        let premise = try JPEGDecoder(source: Self.freshProfileSource(1), limits: ImageLimits()).iccProfile()
        let premiseProfile = try #require(premise)
        let buildStart = Self.threadCPUSeconds()
        _ = try #require(ColorProfileTransform(profile: premiseProfile, layout: .cmykInverted))
        let buildCPU = Self.threadCPUSeconds() - buildStart
        #expect(buildCPU > 0.020, "the premise: a CMYK LUT build costs tens of ms (took \(buildCPU * 1000) ms)")

        // Cancelled once the transform's build is under way (and from then on): before the fix,
        // the render thread built the transform whole and saw the cancel only at its first row
        // (the build's CPU spent). A cancel at a fixed time after the start could come before
        // the render reached the profile on a loaded machine: no build, nothing to keep.
        let source = try Self.freshProfileSource(2)
        let profile = try #require(try JPEGDecoder(source: source, limits: ImageLimits()).iccProfile())
        let key = TransformCache.Key(profile: profile, layout: .cmykInverted)
        let buildStarted = Atomic<Bool>(false)
        let cpuStart = Self.threadCPUSeconds()
        let error = DecodeCancellationTests.thrown {
            _ = try Thumbnailer().render(source, request: Sample.request("large"), isCancelled: {
                if !buildStarted.load(ordering: .relaxed), TransformCache.isBuilding(key) { buildStarted.store(true, ordering: .relaxed) }
                return buildStarted.load(ordering: .relaxed)
            })
        }
        let renderCPU = Self.threadCPUSeconds() - cpuStart
        let startedBuild = buildStarted.load(ordering: .relaxed)
        #expect(startedBuild, "the render started the profile's build on a thread of its own")
        #expect(error == .cancelled)
        #expect(renderCPU < min(0.010, buildCPU / 2), "the cancelled render spent \(renderCPU * 1000) ms of CPU")

        // The build went on without it and is cached for the next render of that profile.
        let deadline = ContinuousClock.now + .seconds(30)
        while TransformCache.lookUp(key) == nil && ContinuousClock.now < deadline { usleep(1000) }
        let kept = try #require(TransformCache.lookUp(key))
        #expect(try ColorProfileTransform.shared(profile: profile, layout: .cmykInverted, isCancelled: { true }) === kept)
        // And a render that is not cancelled gives the same pixels as one on a fresh cache entry.
        let rendered = try Thumbnailer().render(source, request: Sample.request("large"))
        let reference = try Thumbnailer().render(Self.freshProfileSource(3), request: Sample.request("large"))
        #expect(rendered.pixels == reference.pixels)
    }
}
