import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// HDR to SDR (issue 26): the operator's fixed points, and every PQ/HLG file of the corpus's
/// formats-next/hdr set against a reference tone mapping written apart from thumbd's (numpy, in
/// the test), from samples decoded apart from thumbd's (heif-convert's and libvips' 16-bit
/// output): the thumbnail's mean luminance within 10% of the reference's, where the old reading
/// through the sRGB curve was far darker.
@Suite("HDR tone mapping")
struct HDRToneMappingTests {
    @Test func operatorFixedPoints() {
        // ST 2084: 203 cd/m² is PQ 0.5807; 10,000 is 1; round trips.
        #expect(abs(HDRToneMapper.pqInverseEOTF(203) - 0.5807) < 0.0005)
        #expect(abs(HDRToneMapper.pqEOTF(1) - 10_000) < 0.01)
        for nits in [0.01, 1, 100, 203, 1000, 4000] {
            #expect(abs(HDRToneMapper.pqEOTF(HDRToneMapper.pqInverseEOTF(nits)) / nits - 1) < 1e-9)
        }
        // HLG's reference white, 75% signal, is 203 cd/m² on a 1,000 cd/m² display (BT.2408).
        let hlg = HDRToneMapper(HDRSignal(transfer: .hlg, primaries: .bt2020, contentPeakNits: nil), maximumCode: 1000)
        let white = hlg.linearBT709(750, 750, 750)
        let unmapped = 1000 * pow(HDRToneMapper.hlgInverseOETF(0.75), 1.2)
        #expect(abs(unmapped - 203) < 1.5, "\(unmapped)")
        #expect(abs(Double(white.x) - hlg.eetf(unmapped) / 203) < 0.002, "\(white) vs \(hlg.eetf(unmapped) / 203)")
        #expect(abs(white.x - white.y) < 1e-4 && abs(white.y - white.z) < 1e-4, "\(white)")
        // The EETF: monotonic, identity in the shadows, the source's peak to SDR white.
        let pq = HDRToneMapper(HDRSignal(transfer: .pq, primaries: .bt2020, contentPeakNits: 1000), maximumCode: 1023)
        #expect(abs(pq.eetf(1000) - 203) < 0.01)
        #expect(abs(pq.eetf(5) - 5) < 1e-9)
        let curve = stride(from: 0.0, through: 1000, by: 5).map { pq.eetf($0) }
        #expect(zip(curve, curve.dropFirst()).allSatisfy { $0 <= $1 })
        // Above the peak stays at SDR white; black stays black; grey stays grey through the gamut map.
        #expect(pq.linearBT709(1023, 1023, 1023) == SIMD3(repeating: 1))
        #expect(pq.linearBT709(0, 0, 0) == .zero)
        let grey = pq.linearBT709(400, 400, 400)
        #expect(abs(grey.x - grey.y) < 1e-4 && abs(grey.y - grey.z) < 1e-4)
        // BT.2020's pure green is outside BT.709: mapped to a colour with no negative channel and
        // the luminance of the unclipped conversion.
        let green = pq.linearBT709(0, 520, 0)
        #expect(green.min() >= 0 && green.y > green.x && green.y > green.z)
    }

    @Test func primariesMatrices() {
        let same = HDRToneMapper.matrixToBT709(from: .sRGB)
        #expect(abs(same.0.x - 1) < 1e-5 && abs(same.0.y) < 1e-5 && abs(same.1.y - 1) < 1e-5 && abs(same.2.z - 1) < 1e-5)
        // BT.2020 to BT.709 (BT.2087's matrix): first row 1.6605, −0.5876, −0.0728.
        let wide = HDRToneMapper.matrixToBT709(from: .bt2020)
        #expect(abs(wide.0.x - 1.6605) < 0.001 && abs(wide.0.y + 0.5876) < 0.001 && abs(wide.0.z + 0.0728) < 0.001)
        // White stays white.
        #expect(abs(wide.1.sum() - 1) < 1e-4 && abs(wide.2.sum() - 1) < 1e-4)
    }

    /// The HDR set's PQ and HLG files that must decode.
    static func hdrFiles() throws -> [CorpusManifest.Row] {
        try CorpusManifest.nextFormats().filter {
            $0.status == "OK" && ($0.detail.contains("transfer=16 (PQ)") || $0.detail.contains("transfer=18 (HLG)"))
                && ["AVIF", "HEIF", "PNG", "JXL"].contains($0.format)
        }
    }

    @Test func theHDRFilesAreThere() throws {
        let rows = try Self.hdrFiles()
        #expect(rows.count == 8)
        #expect(rows.contains { $0.detail.contains("HLG") && $0.format == "PNG" })
    }

    @Test("mean luminance within 10% of the reference operator's", arguments: try hdrFiles())
    func meanLuminance(_ entry: CorpusManifest.Row) throws {
        let reference = try Self.reference(entry)
        let big = SlotKind(name: "whole", widthPoints: 4096, heightPoints: 4096)
        let rendered = try Thumbnailer().render(loadSource(entry.path), request: ThumbnailRequest(kind: big, scale: 1))
        #expect(rendered.warning == nil, "\(entry.file): \(rendered.warning ?? "")")
        let shown = Self.meanLuminance(rendered.pixels)
        print("HDR \(entry.file): mean luminance \(shown), reference \(reference.toneMapped), sRGB-curve reading (before) \(reference.sRGBCurve)")
        let error = abs(shown - reference.toneMapped) / reference.toneMapped
        #expect(error < 0.10, "\(entry.file): mean luminance \(shown), reference \(reference.toneMapped), sRGB-curve reading \(reference.sRGBCurve)")
        // What the file looked like before: the old reading is the 'dark and flat' one, outside the bound.
        #expect(abs(reference.sRGBCurve - reference.toneMapped) / reference.toneMapped > 0.10,
                "\(entry.file): the sRGB-curve reading \(reference.sRGBCurve) is as bright as the reference \(reference.toneMapped)")
        // And a thumbnail of it (Lanczos on the SDR frame) keeps the luminance.
        let config = try #require(Sample.config)
        let large = try config.catalog.resolve("large")
        let thumbnail = try Thumbnailer().render(loadSource(entry.path), request: ThumbnailRequest(kind: large.kind, scale: large.scale ?? 1))
        #expect(abs(Self.meanLuminance(thumbnail.pixels) - shown) / shown < 0.05, "\(entry.file)")
    }

    /// Mean relative luminance (BT.709, linear light) of 8-bit sRGB pixels, alpha ignored.
    static func meanLuminance(_ pixels: PixelBuffer) -> Double {
        func linear(_ byte: UInt8) -> Double {
            let v = Double(byte) / 255
            return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
        }
        var sum = 0.0
        for index in stride(from: 0, to: pixels.bytes.count, by: pixels.channels) {
            sum += 0.2126 * linear(pixels.bytes[index]) + 0.7152 * linear(pixels.bytes[index + 1]) + 0.0722 * linear(pixels.bytes[index + 2])
        }
        return sum / Double(max(1, pixels.width * pixels.height))
    }

    /// The reference: the file's samples as 16 bits (heif-convert for HEIF/AVIF, the PNG itself),
    /// read raw through libvips, tone-mapped in numpy by BT.2390's EETF to BT.2408's 203 cd/m²
    /// (peak: the manifest's clli MaxCLL, else 1,000), BT.2020/P3 to BT.709 by matrix with
    /// negative channels clipped; and the same samples read through the sRGB curve (the old way).
    static func reference(_ entry: CorpusManifest.Row) throws -> (toneMapped: Double, sRGBCurve: Double) {
        let scratch = try ScratchDirectory("hdr-reference")
        defer { scratch.remove() }
        var sixteen = entry.path
        if entry.format != "PNG" {
            sixteen = scratch.path + "/decoded.png"
            // djxl writes a non-XYB file's samples as coded (PQ), 16 bits.
            let tool = entry.format == "JXL" ? ["djxl", entry.path, sixteen, "--bits_per_sample=16"] : ["heif-convert", entry.path, sixteen]
            let converted = try ChildProcess.run("/usr/bin/env", tool)
            try #require(converted.exitCode == 0, "\(tool[0]) (libheif-examples, libjxl-tools): \(converted.summary)")
        }
        let peak = entry.detail.firstMatch(of: /clli (\d+)\//).map { String($0.1) } ?? "1000"
        // A grey PQ file is grey whatever its primaries.
        let primaries = entry.detail.contains("Grayscale") ? "709"
            : entry.detail.contains("BT.2020") || entry.detail.contains("Rec.2100") ? "2020"
            : entry.detail.contains("Display P3") ? "p3" : "709"
        let transfer = entry.detail.contains("HLG") ? "hlg" : "pq"
        return try reference(sixteenBitPNG: sixteen, peak: peak, primaries: primaries, transfer: transfer, label: entry.file)
    }

    /// The reference of a 16-bit PNG of HDR codes: `peak` in cd/m² ("1000"), `primaries` 709,
    /// 2020 or p3, `transfer` hlg or pq.
    static func reference(sixteenBitPNG sixteen: String, peak: String, primaries: String, transfer: String,
                          label: String) throws -> (toneMapped: Double, sRGBCurve: Double) {
        let scratch = try ScratchDirectory("hdr-reference")
        defer { scratch.remove() }
        let script = """
            import sys, subprocess, os, numpy as np
            path, peak, prims, transfer, scratch = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
            raw = os.path.join(scratch, 'samples.raw')
            subprocess.run(['vips', 'rawsave', path, raw], check=True)
            head = lambda f: subprocess.run(['vipsheader', '-f', f, path], check=True, capture_output=True, text=True).stdout.strip()
            w, h, bands, fmt = int(head('width')), int(head('height')), int(head('bands')), head('format')
            assert 'USHORT' in fmt.upper() and bands in (1, 2, 3, 4), (fmt, bands)
            e = np.fromfile(raw, dtype=np.uint16).reshape(h, w, bands).astype(np.float64) / 65535.0
            e = np.repeat(e[:, :, :1], 3, axis=2) if bands <= 2 else e[:, :, :3]
            m1, m2, c1, c2, c3 = 0.1593017578125, 78.84375, 0.8359375, 18.8515625, 18.6875
            def pq_to_nits(v):
                p = np.power(np.clip(v, 0, 1), 1 / m2)
                return 10000 * np.power(np.maximum(p - c1, 0) / (c2 - c3 * p), 1 / m1)
            def nits_to_pq(l):
                y = np.power(np.clip(l / 10000, 0, 1), m1)
                return np.power((c1 + c2 * y) / (1 + c3 * y), m2)
            if transfer == 'pq':
                light = pq_to_nits(e)
            else:
                a, b, c = 0.17883277, 0.28466892, 0.55991073
                scene = np.where(e <= 0.5, e * e / 3, (np.exp((e - c) / a) + b) / 12)
                ys = scene @ np.array([0.2627, 0.6780, 0.0593])
                light = 1000 * np.power(np.maximum(ys, 0), 0.2)[..., None] * scene
                peak = 1000.0
            peak = max(peak, 203.0)
            top = light.max(axis=2)
            e1 = np.minimum(nits_to_pq(top) / nits_to_pq(peak), 1)
            ml = nits_to_pq(203.0) / nits_to_pq(peak)
            ks = 1.5 * ml - 0.5
            t = np.clip((e1 - ks) / (1 - ks), 0, 1)
            knee = (2*t**3 - 3*t**2 + 1) * ks + (t**3 - 2*t**2 + t) * (1 - ks) + (-2*t**3 + 3*t**2) * ml
            e2 = np.where(e1 > ks, knee, e1)
            mapped_top = pq_to_nits(e2 * nits_to_pq(peak))
            gain = np.where(top > 0, mapped_top / np.maximum(top, 1e-12), 0)
            sdr = light * gain[..., None] / 203.0
            to709 = {'2020': [[1.6605, -0.5876, -0.0728], [-0.1246, 1.1329, -0.0083], [-0.0182, -0.1006, 1.1187]],
                     'p3': [[1.2249, -0.2247, 0.0], [-0.0420, 1.0419, 0.0], [-0.0197, -0.0786, 1.0979]],
                     '709': [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}[prims]
            weights = np.array([0.2126, 0.7152, 0.0722])
            def luminance(rgb): return float((np.clip(rgb @ np.array(to709).T, 0, 1) @ weights).mean())
            srgb = np.where(e <= 0.04045, e / 12.92, np.power((e + 0.055) / 1.055, 2.4))
            print(luminance(sdr), luminance(srgb))
            """
        let output = try Python.run(script, [sixteen, peak, primaries, transfer, scratch.path])
        let words = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        try #require(words.count == 2, "\(label): the reference printed \(String(decoding: output, as: UTF8.self))")
        return (words[0], words[1])
    }
}
