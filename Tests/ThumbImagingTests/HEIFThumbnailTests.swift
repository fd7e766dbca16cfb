import Foundation
import Testing
@testable import ThumbImaging

/// Shrink-on-load for HEIF: an embedded thumbnail stands in for the primary image when it is
/// large enough and truly a scaled copy of it (issue 10, item 1: the 200 MP HEIC).
@Suite("HEIF embedded thumbnails")
struct HEIFThumbnailTests {
    static let photo = "pillow_heif__200MP.heic"

    /// 12240 × 16320 shown, a 384 × 512 thumbnail: every small kind is made from the thumbnail.
    @Test(arguments: ["contact-avatar@3x", "product-grid@3x", "large"])
    func smallKindsOfThe200MPPhotoUseItsThumbnail(_ slot: String) throws {
        let observed = try ObservedLoad(try HEIFCorpus.file(Self.photo).path)
        #expect(observed.loader.storedWidth == 12240 && observed.loader.storedHeight == 16320)
        let output = try #require(try observed.render([slot]).first)
        #expect(observed.loader.decodedImage == .thumbnail(width: 384, height: 512))
        let request = try Sample.request(slot)
        let pixelSlot = request.kind.pixelSize(scale: request.scale)
        let expected = ExpectedSize.of(sourceWidth: 12240, sourceHeight: 16320, slotWidth: pixelSlot.width,
                                       slotHeight: pixelSlot.height, fill: request.kind.mode == .fill)
        #expect(output.pixels.width == expected.width && output.pixels.height == expected.height, "\(slot)")
    }

    /// A 1024-px output needs more than the 512-px thumbnail: the primary image is chosen (the
    /// render is stopped right after the choice, before the 200 MP decode).
    @Test func a1024PixelOutputFallsBackToThePrimaryImage() throws {
        let observed = try ObservedLoad(try HEIFCorpus.file(Self.photo).path)
        #expect(throws: ImagingError.cancelled) { _ = try observed.render(["xx-large"], stopAfterChoice: true) }
        #expect(observed.loader.decodedImage == .primary)
        // …and the same stop after a small kind's choice sees the thumbnail: the stop itself does not decide.
        let small = try ObservedLoad(try HEIFCorpus.file(Self.photo).path)
        #expect(throws: ImagingError.cancelled) { _ = try small.render(["product-grid@3x"], stopAfterChoice: true) }
        #expect(small.loader.decodedImage == .thumbnail(width: 384, height: 512))
    }

    /// The rule itself: large enough along both axes, smaller than the primary, aspect within 1%.
    @Test func thumbnailRule() {
        func serves(_ tw: Int, _ th: Int, shrink: Double, primary: (Int, Int) = (12240, 16320)) -> Bool {
            HEIFLoader.thumbnailServes(primaryWidth: primary.0, primaryHeight: primary.1, thumbnailWidth: tw,
                                       thumbnailHeight: th, maxShrink: shrink)
        }
        #expect(serves(384, 512, shrink: 31.875))          // exactly primary / maxShrink
        #expect(!serves(384, 512, shrink: 31.8))           // one pixel short of the need
        #expect(!serves(384, 512, shrink: 1))
        #expect(!serves(512, 512, shrink: 40))             // letterboxed into a square: aspect 1 vs 0.75
        #expect(serves(385, 512, shrink: 40))              // 0.26% off: a rounding of the scaled size
        #expect(serves(381, 512, shrink: 40) && serves(387, 512, shrink: 40))   // 0.78% off either way
        #expect(!serves(380, 512, shrink: 40) && !serves(388, 512, shrink: 40)) // 1.04% off
        #expect(!serves(12240, 16320, shrink: 2))          // not smaller than the primary
        // Issue 37 item 7: another picture listed as the thumbnail, larger and of another shape.
        #expect(!serves(1197, 1227, shrink: 8, primary: (564, 870)) && !serves(1227, 1197, shrink: 8, primary: (564, 870)))
        // Smaller along one axis but larger along the other (aspect within the 1%): not a
        // scaled copy of the primary, never used (the rule said "smaller along either axis").
        #expect(!serves(999, 1009, shrink: 8, primary: (1000, 1000)) && !serves(1009, 999, shrink: 8, primary: (1000, 1000)))
        #expect(serves(995, 999, shrink: 8, primary: (1000, 1000)))
        #expect(!serves(0, 512, shrink: 40) && !serves(384, 512, shrink: .nan) && !serves(384, 512, shrink: .infinity))
    }

    /// Real files made here: a primary with a proper thumbnail, and one whose thumbnail is
    /// letterboxed into a square (as some cameras write, libheif#1406).
    @Test func letterboxedThumbnailIsNotUsed() throws {
        let primary = Self.gradient(width: 600, height: 400, seed: 1)
        var settings = EncoderSettings()
        settings.avifSpeed = 9
        let proper = try AVIFEncoder.encode(primary, thumbnail: Self.gradient(width: 300, height: 200, seed: 1),
                                            settings: settings, isCancelled: nil)
        let boxed = try AVIFEncoder.encode(primary, thumbnail: Self.gradient(width: 300, height: 300, seed: 1),
                                           settings: settings, isCancelled: nil)
        for (bytes, expected) in [(proper, HEIFLoader.DecodedImage.thumbnail(width: 300, height: 200)), (boxed, .primary)] {
            let loader = try HEIFLoader(source: SourceBytes(bytes), format: .avif, limits: ImageLimits())
            let frame = try loader.load(maxShrink: 2, isCancelled: nil)
            #expect(loader.decodedImage == expected)
            // The frame never breaks the contract: at least stored / maxShrink, same aspect.
            #expect(frame.pixels.width >= 300 && frame.pixels.height >= 200)
            #expect(abs(Double(frame.pixels.width) / Double(frame.pixels.height) - 1.5) < 0.015)
        }
        // With no reduction allowed, even the proper thumbnail is not used.
        let loader = try HEIFLoader(source: SourceBytes(proper), format: .avif, limits: ImageLimits())
        _ = try loader.load(maxShrink: 1.9, isCancelled: nil)
        #expect(loader.decodedImage == .primary)
    }

    /// Issue 26's first defect: a thumbnail of another picture, with another aspect ratio and
    /// larger than the primary (or smaller along one side only), is never what the output shows.
    /// The output from the file with that thumbnail must equal the output from the same primary
    /// encoded without one, on every path (the loader's choice and a render for every kind).
    @Test(arguments: [(600, 600), (900, 300), (150, 600), (320, 180)])
    func thumbnailOfAnotherShapeIsNeverRendered(_ size: (Int, Int)) throws {
        let primary = Self.gradient(width: 300, height: 200, seed: 1)
        let other = Self.stripes(width: size.0, height: size.1)
        var settings = EncoderSettings()
        settings.avifSpeed = 9
        let withThumbnail = try AVIFEncoder.encode(primary, thumbnail: other, settings: settings, isCancelled: nil)
        let plain = try AVIFEncoder.encode(primary, thumbnail: nil, settings: settings, isCancelled: nil)
        // The same file whose thumbnail's `ispe` claims a scaled copy (150x100) of the primary:
        // libheif's handle then says 150x100 while the decoded thumbnail is the other picture.
        let lying = try Self.replacingSize(in: withThumbnail, from: size, to: (150, 100))
        for file in [withThumbnail, lying] {
            try expectPrimaryRendered(file, plain: plain, size: size)
        }
    }

    func expectPrimaryRendered(_ withThumbnail: [UInt8], plain: [UInt8], size: (Int, Int)) throws {
        for maxShrink in [1.0, 2, 4, 8] {
            let loader = try HEIFLoader(source: SourceBytes(withThumbnail), format: .avif, limits: ImageLimits())
            let frame = try loader.load(maxShrink: maxShrink, outputShrink: maxShrink * 2, isCancelled: nil)
            #expect(loader.decodedImage == .primary, "\(size) at \(maxShrink): \(String(describing: loader.decodedImage))")
            // Whole blocks of the reduction (the last one partial): 300x200 at 8 is 38x25.
            let factor = Int(maxShrink)
            #expect(frame.pixels.width == (300 + factor - 1) / factor && frame.pixels.height == (200 + factor - 1) / factor,
                    "\(size) at \(maxShrink): \(frame.pixels.width)x\(frame.pixels.height)")
        }
        let config = try #require(Sample.config)
        for slot in ["contact-avatar@2x", "product-grid@3x", "large"] {
            let selection = try config.catalog.resolve(slot)
            let request = ThumbnailRequest(kind: selection.kind, scale: selection.scale ?? selection.kind.scales[0])
            let shown = try Thumbnailer().render(SourceBytes(withThumbnail), request: request)
            let expected = try Thumbnailer().render(SourceBytes(plain), request: request)
            #expect(shown.pixels.width == expected.pixels.width && shown.pixels.height == expected.pixels.height,
                    "\(size) @ \(slot): \(shown.pixels.width)x\(shown.pixels.height), not \(expected.pixels.width)x\(expected.pixels.height)")
            if shown.pixels.width == expected.pixels.width && shown.pixels.height == expected.pixels.height {
                let difference = zip(shown.pixels.bytes, expected.pixels.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
                #expect(difference <= 2, "\(size) @ \(slot): differs by \(difference) from the primary's render")
            }
        }
    }

    /// `bytes` with the `ispe` box of size `from` saying `to` instead (exactly one such box).
    static func replacingSize(in bytes: [UInt8], from: (Int, Int), to: (Int, Int)) throws -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        let pattern = Array("ispe".utf8) + [0, 0, 0, 0] + be32(from.0) + be32(from.1)
        let starts = (0...(bytes.count - pattern.count)).filter { Array(bytes[$0..<$0 + pattern.count]) == pattern }
        try #require(starts.count == 1, "\(starts.count) ispe boxes of \(from.0)x\(from.1)")
        var patched = bytes
        patched.replaceSubrange(starts[0] + 8..<starts[0] + 16, with: be32(to.0) + be32(to.1))
        return patched
    }

    /// Vertical black and white stripes 8 px wide: nothing like `gradient`.
    static func stripes(width: Int, height: Int) -> PixelBuffer {
        var pixels = PixelBuffer(width: width, height: height, channels: 3)
        for y in 0..<height {
            for x in 0..<width {
                let value: UInt8 = (x / 8) % 2 == 0 ? 0 : 255
                for channel in 0..<3 { pixels.bytes[(y * width + x) * 3 + channel] = value }
            }
        }
        return pixels
    }

    /// The quality cost of the thumbnail path: the avatar and the grid cell made from the 512-px
    /// thumbnail against the same outputs made from the full 200 MP decode (a loader that is
    /// given no reduction). Measured: see the report numbers in Benchmarks/heif-200mp.sh.
    @Test func thumbnailPathCostsLittleQuality() throws {
        let path = try HEIFCorpus.file(Self.photo).path
        let slots = ["contact-avatar@3x", "product-grid@3x"]
        let viaThumbnail = try ObservedLoad(path)
        let small = try viaThumbnail.render(slots)
        #expect(viaThumbnail.loader.decodedImage == .thumbnail(width: 384, height: 512))
        let full = try Thumbnailer().renderFrame(FullDecode(try ObservedLoad(path).loader),
                                                 requests: slots.map { try Sample.request($0) }, isCancelled: nil)
        for (index, slot) in slots.enumerated() {
            let (a, b) = (small[index].pixels, full[index].pixels)
            #expect(a.width == b.width && a.height == b.height)
            let error = Pixels.meanAbsoluteError(a.bytes, channelsA: a.channels, b.bytes, channelsB: b.channels)
            print("200 MP \(slot): thumbnail path vs full decode, mean absolute error \(error)")
            #expect(error < 6, "\(slot): mean error \(error) between the thumbnail path and the full decode")
        }
    }

    /// A loader that always decodes at full resolution (maxShrink 1).
    final class FullDecode: FrameLoader {
        let inner: HEIFLoader
        init(_ inner: HEIFLoader) { self.inner = inner }
        var storedWidth: Int { inner.storedWidth }
        var storedHeight: Int { inner.storedHeight }
        var orientation: Orientation { inner.orientation }
        func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
            try inner.load(maxShrink: 1, isCancelled: isCancelled)
        }
    }

    static func gradient(width: Int, height: Int, seed: Int) -> PixelBuffer {
        var pixels = PixelBuffer(width: width, height: height, channels: 3)
        for y in 0..<height {
            for x in 0..<width {
                let at = (y * width + x) * 3
                pixels.bytes[at] = UInt8(x * 255 / max(1, width - 1))
                pixels.bytes[at + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels.bytes[at + 2] = UInt8(truncatingIfNeeded: (x / 20 + y / 20 + seed) % 2 * 200)
            }
        }
        return pixels
    }
}
