import Foundation
import Testing
@testable import ThumbImaging

/// What the HEIF loader does with deep samples, colour parameters, limits and cancellation.
@Suite("HEIF decoding")
struct HEIFDecodeTests {
    /// 10- and 12-bit samples are rounded to 8 bits: against pillow-heif's 16-bit decode
    /// (libheif 1.23, samples shifted left) rounded by hand, nearly every sample is equal.
    @Test(arguments: ["pillow_heif__RGB_10__128x128.heif", "pillow_heif__RGBA_12__128x128.heif"])
    func deepSamplesAreRounded(_ file: String) throws {
        let row = try HEIFCorpus.file(file)
        let frame = try HEIFLoader(source: loadSource(row.path), format: .heif, limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        let script = """
            import sys, pillow_heif, numpy as np
            h = pillow_heif.open_heif(sys.argv[1], convert_hdr_to_8bit=False)
            bits = int(sys.argv[2]); channels = 4 if h.has_alpha else 3
            a = np.frombuffer(h.data, dtype='<u2').reshape(h.size[1], h.stride // 2)[:, :h.size[0] * channels]
            v = (a >> (16 - bits)).astype(np.float64)
            sys.stdout.buffer.write(np.floor(v * 255 / ((1 << bits) - 1) + 0.5).astype(np.uint8).tobytes())
            """
        let bits = file.contains("_12_") ? 12 : 10
        let reference = [UInt8](try Python.run(script, [row.path, "\(bits)"]))
        #expect(reference.count == frame.pixels.bytes.count)
        let error = Pixels.meanAbsoluteError(frame.pixels.bytes, channelsA: frame.pixels.channels, reference,
                                             channelsB: frame.pixels.channels)
        let equal = zip(frame.pixels.bytes, reference).filter { $0 == $1 }.count
        #expect(error < 0.6, "\(file): mean error \(error), \(equal) of \(reference.count) samples equal")
    }

    /// nclx with Display P3 primaries: the loader builds an ICC profile for them, and the
    /// thumbnail comes out converted to sRGB (a flat P3 colour, made here with pillow-heif).
    @Test func displayP3PrimariesAreConverted() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-p3-\(UUID()).heic")
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
            import sys, pillow_heif
            from PIL import Image
            pillow_heif.options.SAVE_NCLX_PROFILE = True
            h = pillow_heif.from_pillow(Image.new('RGB', (64, 48), (200, 100, 50)))
            h.info['nclx_profile'] = {'color_primaries': 12, 'transfer_characteristics': 13,
                                      'matrix_coefficients': 6, 'full_range_flag': 1}
            h.save(sys.argv[1], quality=95)
            """
        _ = try Python.run(script, [file.path])
        let source = try loadSource(file.path)
        let frame = try HEIFLoader(source: source, format: .heif, limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        #expect(frame.iccProfile != nil)
        let rendered = try Thumbnailer().render(source, request: Sample.request("large"))
        let pixel = Pixels.rgb(rendered.pixels, x: 20, y: 20)
        let expected = Self.displayP3ToSRGB(200, 100, 50)
        #expect(abs(pixel.r - expected.0) <= 4 && abs(pixel.g - expected.1) <= 4 && abs(pixel.b - expected.2) <= 4,
                "P3 (200,100,50) shown as \(pixel), sRGB of it is \(expected)")
    }

    /// BT.709 or unspecified primaries with an SDR transfer are sRGB (HDR transfers never get
    /// here: `HDRToneMappingTests`).
    @Test func nclxWithoutAProfile() {
        #expect(HEIFLoader.nclxProfile(primaries: 1, transfer: 13, chromaticities: .sRGB).profile == nil)
        #expect(HEIFLoader.nclxProfile(primaries: 2, transfer: 1, chromaticities: .sRGB).profile == nil)
        let linear = HEIFLoader.nclxProfile(primaries: 1, transfer: 8, chromaticities: .sRGB)
        #expect(linear.profile != nil, "a linear transfer is not sRGB")
        // A profile built twice is the same bytes (the transform cache is keyed by them).
        #expect(linear.profile == HEIFLoader.nclxProfile(primaries: 1, transfer: 8, chromaticities: .sRGB).profile)
    }

    /// Limits before any pixel: the displayed size, and libheif's planar image against the
    /// decoder memory limit.
    @Test func limitsAreCheckedBeforeDecoding() throws {
        let source = try loadSource(try HEIFCorpus.file("pillow_heif__200MP.heic").path)
        var small = ImageLimits()
        small.maxPixels = 100_000_000
        #expect(throws: ImagingError.tooLarge(reason: "12240x16320 exceeds the 100000000-pixel limit")) {
            _ = try HEIFLoader(source: source, format: .heif, limits: small)
        }
        var memory = ImageLimits()
        memory.maxDecoderMemoryBytes = 256 << 20
        do {
            _ = try HEIFLoader(source: source, format: .heif, limits: memory)
            Issue.record("a 600 MB planar image passed a 256 MB limit")
        } catch {
            guard case .tooLarge(let reason) = error else { throw error }
            #expect(reason.contains("571 MB") && reason.contains("256-MB"), "\(reason)")
        }
        #expect(HEIFLoader.decoderMemoryBytes(width: 12240, height: 16320, codedWidth: 16320, codedHeight: 12240,
                                              hasAlpha: false, lumaBits: 8) == 12240 * 16320 * 3)
        #expect(HEIFLoader.decoderMemoryBytes(width: 100, height: 100, codedWidth: 100, codedHeight: 100,
                                              hasAlpha: true, lumaBits: 10) == 100 * 100 * 8)
        #expect(HEIFLoader.decoderMemoryBytes(width: .max, height: .max, codedWidth: 1, codedHeight: 1,
                                              hasAlpha: true, lumaBits: 12) == .max)
    }

    @Test func cancellationStopsTheLoad() throws {
        let row = try HEIFCorpus.file("libheif__example.avif")
        let loader = try HEIFLoader(source: loadSource(row.path), format: .avif, limits: ImageLimits())
        #expect(throws: ImagingError.cancelled) { _ = try loader.load(maxShrink: 1, isCancelled: { true }) }
        // Cancelled after the decode, while interleaving (the check asked between rows).
        nonisolated(unsafe) var asked = 0
        #expect(throws: ImagingError.cancelled) {
            _ = try loader.load(maxShrink: 1, isCancelled: { asked += 1; return asked > 2 })
        }
    }

    /// The reduction while interleaving: a 2× block average keeps the frame within the contract.
    @Test func integerReductionWhileInterleaving() throws {
        #expect(HEIFLoader.integerReduction(1.9) == 1 && HEIFLoader.integerReduction(2) == 2)
        #expect(HEIFLoader.integerReduction(7.97) == 7 && HEIFLoader.integerReduction(1000) == 64)
        #expect(HEIFLoader.integerReduction(.nan) == 1 && HEIFLoader.integerReduction(.infinity) == 1)
        let row = try HEIFCorpus.file("libavif__fox.profile0.10bpc.yuv420.avif")
        let loader = try HEIFLoader(source: loadSource(row.path), format: .avif, limits: ImageLimits())
        let full = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        let half = try loader.load(maxShrink: 2.5, isCancelled: nil).pixels
        #expect(half.width == 602 && half.height == 400)
        // Block (10, 10) of the half frame is the rounded mean of the full frame's 2×2 block.
        for channel in 0..<3 {
            let sum = [(20, 20), (21, 20), (20, 21), (21, 21)].map { Int(full.bytes[($0.1 * full.width + $0.0) * 3 + channel]) }.reduce(0, +)
            #expect(abs(Int(half.bytes[(10 * half.width + 10) * 3 + channel]) - sum / 4) <= 1)
        }
    }

    /// sRGB encoding of a Display P3 colour (both D65, sRGB curve), clipped.
    static func displayP3ToSRGB(_ r: Int, _ g: Int, _ b: Int) -> (Int, Int, Int) {
        func decode(_ v: Int) -> Double {
            let c = Double(v) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        func encode(_ c: Double) -> Int {
            let v = min(1, max(0, c))
            return Int(((v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1 / 2.4) - 0.055) * 255).rounded())
        }
        let (lr, lg, lb) = (decode(r), decode(g), decode(b))
        return (encode(1.2249 * lr - 0.2247 * lg), encode(-0.0420 * lr + 1.0419 * lg), encode(-0.0197 * lr - 0.0786 * lg + 1.0979 * lb))
    }
}
