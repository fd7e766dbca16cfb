import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// JXLLoader on its own: sniffing, orientation, alpha, grey, animation, truncation, limits,
/// cancellation, the block reduction.
@Suite("JPEG XL loader")
struct JXLLoaderTests {
    static func loader(_ name: String, limits: ImageLimits = ImageLimits()) throws -> JXLLoader {
        try JXLLoader(source: try loadSource(try JXLRow.named(name).path), limits: limits)
    }

    static func attempt(_ name: String, limits: ImageLimits) throws -> Result<JXLLoader, ImagingError> {
        let source = try loadSource(try JXLRow.named(name).path)
        do throws(ImagingError) { return .success(try JXLLoader(source: source, limits: limits)) } catch { return .failure(error) }
    }

    /// The reason of a `.tooLarge` refusal, nil for anything else.
    static func tooLargeReason(_ result: Result<JXLLoader, ImagingError>) -> String? {
        if case .failure(.tooLarge(let reason)) = result { reason } else { nil }
    }

    @Test func sniffsTheCodestreamAndTheContainer() throws {
        func sniff(_ bytes: [UInt8]) -> SourceFormat? { bytes.withUnsafeBytes { SourceFormat.sniff($0) } }
        #expect(sniff([0xFF, 0x0A, 0x00]) == .jxl)
        #expect(sniff([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) == .jxl)
        #expect(sniff([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0B]) == nil)
        #expect(sniff([0xFF, 0x0B]) == nil)
        for row in try JXLRow.all() where row.status != "ERROR" {
            #expect(try loadSource(row.path).format == .jxl, "\(row.file)")
        }
        #expect(SourceFormat.jxl.name == "JPEG XL")
    }

    /// Orientation 5 (transpose): libjxl turns the 500x606 frame to 606x500, and the loader says `.up`.
    @Test func orientationIsAppliedByLibjxl() throws {
        let loader = try Self.loader("bench_oriented_brg.jxl")
        #expect(loader.storedWidth == 606 && loader.storedHeight == 500 && loader.orientation == .up)
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.width == 606 && frame.pixels.height == 500)
    }

    @Test func premultipliedAlphaComesOutStraight() throws {
        let frame = try Self.loader("alpha_premultiplied.jxl").load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.channels == 4)
        // Straight alpha: some half-transparent pixel has a colour brighter than its alpha
        // allows premultiplied (colour ≤ alpha there).
        var alphas = Set<UInt8>(), brighter = 0
        for pixel in stride(from: 0, to: frame.pixels.bytes.count, by: 4) {
            let alpha = frame.pixels.bytes[pixel + 3]
            alphas.insert(alpha)
            if alpha > 0 && alpha < 255 && (0..<3).contains(where: { frame.pixels.bytes[pixel + $0] > alpha }) { brighter += 1 }
        }
        #expect(alphas.count > 16 && brighter > 0, "\(alphas.count) alpha levels, \(brighter) brighter")
    }

    @Test func greyComesOutAsRGB() throws {
        let loader = try Self.loader("grayscale.jxl")
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.channels == 3 && frame.iccProfile == nil)
        var levels = Set<UInt8>()
        for pixel in stride(from: 0, to: frame.pixels.bytes.count, by: 3) {
            let (r, g, b) = (frame.pixels.bytes[pixel], frame.pixels.bytes[pixel + 1], frame.pixels.bytes[pixel + 2])
            #expect(r == g && g == b)
            levels.insert(r)
        }
        #expect(levels.count > 16)
    }

    /// The first frame of a 48-frame animation, against djxl's first frame (djxl 0.7 writes
    /// every frame of an animation to a numbered PNG).
    @Test func animationGivesTheFirstFrame() throws {
        let row = try JXLRow.named("animation_icos4d.jxl")
        let frame = try JXLLoader(source: try loadSource(row.path), limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        let script = """
            import glob, os, subprocess, sys, tempfile
            from PIL import Image
            with tempfile.TemporaryDirectory() as folder:
                subprocess.run(['djxl', sys.argv[1], os.path.join(folder, 'f.png')], check=True, capture_output=True)
                first = sorted(glob.glob(os.path.join(folder, '*.png')))[0]
                sys.stdout.buffer.write(Image.open(first).convert('RGBA').tobytes())
            """
        let reference = [UInt8](try Python.run(script, [row.path]))
        #expect(reference.count == frame.pixels.bytes.count && frame.pixels.channels == 4)
        let error = Pixels.meanAbsoluteError(frame.pixels.bytes, channelsA: 4, reference, channelsB: 4)
        print("JXL first frame vs djxl: \(error)")
        #expect(error < 1)
    }

    /// A real file cut at several points: a clean error naming the end of the data (or the
    /// codestream), never a crash and never a picture.
    @Test func truncatedFilesAreRefused() throws {
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: try JXLRow.named("bicycles.jxl").path)))
        for fraction in [0.002, 0.05, 0.3, 0.6, 0.9, 0.999] {
            let cut = Int(Double(whole.count) * fraction)
            switch try JXLTests.attempt(SourceBytes(whole.prefix(cut))) {
            case .success: Issue.record("\(cut) of \(whole.count) bytes rendered")
            case .failure(let error):
                guard case .undecodable(let reason) = error else { Issue.record("\(cut) bytes: \(error)"); continue }
                #expect(reason.contains("the data ends before the image is complete") || reason.contains("codestream is invalid"),
                        "\(cut) bytes: \(reason)")
            }
        }
    }

    /// 262138x7 declared by an oss-fuzz case: refused by the side limit at the header.
    @Test func hugeHeaderIsRefusedBeforeAllocation() throws {
        let fuzzCase = Self.tooLargeReason(try Self.attempt("oss-fuzz-5631220790198272.jxl", limits: ImageLimits()))
        #expect(fuzzCase?.contains("262138x7") == true, "\(fuzzCase ?? "not refused as too large")")
        var pixels = ImageLimits()
        pixels.maxPixels = 600_000
        #expect(throws: ImagingError.tooLarge(reason: "1024x631 exceeds the 600000-pixel limit")) {
            _ = try Self.loader("bicycles.jxl", limits: pixels)
        }
        var memory = ImageLimits()
        memory.maxDecoderMemoryBytes = 4 << 20
        let memoryReason = Self.tooLargeReason(try Self.attempt("bicycles.jxl", limits: memory))
        #expect(memoryReason?.contains("decoder memory limit") == true, "\(memoryReason ?? "not refused as too large")")
    }

    @Test func cancellationThrowsCancelled() throws {
        let loader = try Self.loader("bicycles.jxl")
        #expect(throws: ImagingError.cancelled) { _ = try loader.load(maxShrink: 1, isCancelled: { true }) }
        // Cancelled between libjxl's events (the first check passes).
        let calls = Counter()
        #expect(throws: ImagingError.cancelled) { _ = try loader.load(maxShrink: 1, isCancelled: { calls.next() > 1 }) }
        // The decoder starts over after a cancelled decode.
        #expect(try loader.load(maxShrink: 1, isCancelled: nil).pixels.width == 1024)
    }

    /// maxShrink 4: 4×4 blocks (the last partial), colour close to the full decode's block means.
    @Test func blockReductionWhileConverting() throws {
        let full = try Self.loader("upsampling.jxl").load(maxShrink: 1, isCancelled: nil)
        let reduced = try Self.loader("upsampling.jxl").load(maxShrink: 4.5, isCancelled: nil)
        #expect(reduced.pixels.width == 200 && reduced.pixels.height == 150 && reduced.pixels.channels == full.pixels.channels)
        #expect(reduced.storedPixelsPerPixel?.x == 4 && reduced.storedPixelsPerPixel?.y == 4)
        // Block (bx, by): colour weighted by alpha, alpha the plain mean, each within a level.
        for (bx, by) in [(0, 0), (57, 33), (100, 75), (199, 149), (120, 20)] {
            var colour = [0, 0, 0], alphaSum = 0
            for y in (by * 4)..<(by * 4 + 4) {
                for x in (bx * 4)..<(bx * 4 + 4) {
                    let pixel = Pixels.rgb(full.pixels, x: x, y: y)
                    colour[0] += pixel.r * pixel.a; colour[1] += pixel.g * pixel.a; colour[2] += pixel.b * pixel.a
                    alphaSum += pixel.a
                }
            }
            let got = Pixels.rgb(reduced.pixels, x: bx, y: by)
            #expect(abs(got.a - (alphaSum + 8) / 16) <= 1, "block \(bx),\(by)")
            if alphaSum > 0 {
                let expected = colour.map { ($0 + alphaSum / 2) / alphaSum }
                #expect(abs(got.r - expected[0]) <= 1 && abs(got.g - expected[1]) <= 1 && abs(got.b - expected[2]) <= 1,
                        "block \(bx),\(by): \(got) against \(expected)")
            }
        }
        #expect(Pixels.rgb(reduced.pixels, x: 100, y: 75) != Pixels.rgb(reduced.pixels, x: 10, y: 10))
    }
}
