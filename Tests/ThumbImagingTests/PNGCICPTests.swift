import Foundation
import Testing
@testable import ThumbImaging

/// PNG's `cICP` for SDR transfers (issue 37, item 9): the PNG third edition (§ 11.3.2.6) says a
/// `cICP` chunk overrides `gAMA`, `cHRM`, `sRGB` and `iCCP`, whatever its transfer. Before, only
/// PQ and HLG were honoured, and a bogus `gAMA` beside an sRGB `cICP` still brightened the image.
@Suite("PNG cICP with an SDR transfer")
struct PNGCICPTests {
    /// Moderately saturated colours, inside sRGB's gamut from P3 and from BT.2020, so that the
    /// reference needs no gamut mapping (a clip would be the CMS's choice, not the maths').
    static let colours: [(UInt8, UInt8, UInt8)] = [(200, 80, 60), (60, 160, 90), (90, 110, 200), (128, 128, 128),
                                                   (230, 200, 40), (20, 30, 40), (250, 250, 250), (170, 60, 170)]

    /// The colours as one row, repeated, with `chunks` between IHDR and IDAT.
    static func png(_ chunks: [[UInt8]]) -> SourceBytes {
        let row = colours.flatMap { [$0.0, $0.1, $0.2] }
        return SourceBytes(PNGBuilder.png(width: UInt32(colours.count), height: 4, bitDepth: 8, colorType: 2,
                                          rows: [[UInt8]](repeating: row, count: 4), extraChunks: chunks))
    }

    static func cICP(primaries: UInt8, transfer: UInt8) -> [UInt8] { PNGBuilder.chunk("cICP", [primaries, transfer, 0, 1]) }
    /// gAMA 1.0 (linear): libpng would lift every mid-tone by about a third.
    static let bogusGamma = PNGBuilder.chunk("gAMA", PNGBuilder.be32(100_000))
    /// An iCCP saying linear-light BT.709 (a matrix/TRC profile, gamma 1).
    static func linearICCP() throws -> [UInt8] {
        let profile = try #require(HEIFLoader.nclxProfile(primaries: 1, transfer: 8, chromaticities: .sRGB).profile)
        return PNGBuilder.chunk("iCCP", Array("linear".utf8) + [0, 0] + PNGBuilder.zlibStored(profile))
    }

    /// The decode at its own size (a fit box of 8x4: no resampling), as RGB triples.
    static func decoded(_ source: SourceBytes) throws -> [(Int, Int, Int)] {
        let selection = try SlotSpec.parse("\(colours.count)x4,fit")
        let pixels = try Thumbnailer().render(source, request: ThumbnailRequest(kind: selection.kind, scale: 1)).pixels
        try #require(pixels.width == colours.count && pixels.height == 4)
        return (0..<colours.count).map { x in
            let at = x * pixels.channels
            return (Int(pixels.bytes[at]), Int(pixels.bytes[at + 1]), Int(pixels.bytes[at + 2]))
        }
    }

    @Test("cICP with BT.709 primaries and an SDR transfer renders as sRGB, whatever gAMA and iCCP say",
          arguments: [UInt8(13), 1, 6, 14, 15])
    func sRGBPrimaries(_ transfer: UInt8) throws {
        let expected = Self.colours.map { (Int($0.0), Int($0.1), Int($0.2)) }
        for extra in [[Self.bogusGamma], [try Self.linearICCP()], [Self.bogusGamma, try Self.linearICCP()]] {
            // Before and after the other chunks: the order of chunks decides nothing.
            for chunks in [[Self.cICP(primaries: 1, transfer: transfer)] + extra, extra + [Self.cICP(primaries: 1, transfer: transfer)]] {
                let got = try Self.decoded(Self.png(chunks))
                for (index, (ours, wanted)) in zip(got, expected).enumerated() {
                    #expect(Self.distance(ours, wanted) <= 1, "transfer \(transfer), colour \(index): \(ours), not \(wanted)")
                }
            }
        }
    }

    @Test("cICP with P3 or BT.2020 primaries and an SDR transfer is converted to sRGB (gAMA beside it ignored)",
          arguments: [(UInt8(12), UInt8(13)), (12, 1), (9, 1), (9, 14), (9, 13)])
    func widePrimaries(_ primaries: UInt8, _ transfer: UInt8) throws {
        let source = Chromaticity.h273[Int(primaries)]!
        let expected = Self.colours.map { Chromaticity.toSRGB(($0.0, $0.1, $0.2), from: source) }
        for chunks in [[Self.cICP(primaries: primaries, transfer: transfer)], [Self.bogusGamma, Self.cICP(primaries: primaries, transfer: transfer)]] {
            let got = try Self.decoded(Self.png(chunks))
            for (index, (ours, wanted)) in zip(got, expected).enumerated() {
                #expect(Self.distance(ours, wanted) <= 2, "cICP \(primaries)/\(transfer), colour \(index): \(ours), not \(wanted)")
            }
        }
    }

    /// The reference really tells the spaces apart: P3's and BT.2020's colours moved by more
    /// than the tolerance (else the test above could not fail).
    @Test func referenceMovesTheColours() {
        for primaries in [9, 12] {
            let moved = Self.colours.map { colour in
                Self.distance(Chromaticity.toSRGB(colour, from: Chromaticity.h273[primaries]!), (Int(colour.0), Int(colour.1), Int(colour.2)))
            }
            #expect(moved.max()! > 10, "primaries \(primaries): \(moved)")
        }
    }

    static func distance(_ a: (Int, Int, Int), _ b: (Int, Int, Int)) -> Int {
        max(abs(a.0 - b.0), abs(a.1 - b.1), abs(a.2 - b.2))
    }
}

/// The colorimetry of the reference, written out from the standards rather than taken from
/// thumbd: the sRGB curve (IEC 61966-2-1), RGB→XYZ from the primaries' xy (SMPTE RP 177), and
/// the H.273 primaries' coordinates (BT.709, BT.2020, Display P3 / SMPTE EG 432-1; all D65).
enum Chromaticity {
    typealias XY = (x: Double, y: Double)
    static let h273: [Int: [XY]] = [
        1: [(0.64, 0.33), (0.30, 0.60), (0.15, 0.06), (0.3127, 0.3290)],
        9: [(0.708, 0.292), (0.170, 0.797), (0.131, 0.046), (0.3127, 0.3290)],
        12: [(0.680, 0.320), (0.265, 0.690), (0.150, 0.060), (0.3127, 0.3290)],
    ]

    static func decode(_ v: Double) -> Double { v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4) }
    static func encode(_ l: Double) -> Double { l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055 }

    static func rgbToXYZ(_ p: [XY]) -> [[Double]] {
        func column(_ c: XY) -> [Double] { [c.x / c.y, 1, (1 - c.x - c.y) / c.y] }
        let (r, g, b, w) = (column(p[0]), column(p[1]), column(p[2]), column(p[3]))
        let m = [[r[0], g[0], b[0]], [r[1], g[1], b[1]], [r[2], g[2], b[2]]]
        let s = multiply(inverse(m), w)
        return m.map { row in (0..<3).map { row[$0] * s[$0] } }
    }

    static func multiply(_ m: [[Double]], _ v: [Double]) -> [Double] { m.map { zip($0, v).map(*).reduce(0, +) } }

    static func inverse(_ m: [[Double]]) -> [[Double]] {
        let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
        func c(_ r: Int, _ k: Int) -> Double {
            let rows = (0..<3).filter { $0 != r }, cols = (0..<3).filter { $0 != k }
            let minor = m[rows[0]][cols[0]] * m[rows[1]][cols[1]] - m[rows[0]][cols[1]] * m[rows[1]][cols[0]]
            return ((r + k) % 2 == 0 ? 1 : -1) * minor
        }
        return (0..<3).map { row in (0..<3).map { col in c(col, row) / det } }
    }

    /// An 8-bit colour coded with the sRGB curve in `source` primaries, as 8-bit sRGB.
    static func toSRGB(_ colour: (UInt8, UInt8, UInt8), from source: [XY]) -> (Int, Int, Int) {
        let linear = [colour.0, colour.1, colour.2].map { decode(Double($0) / 255) }
        let xyz = multiply(rgbToXYZ(source), linear)
        let srgb = multiply(inverse(rgbToXYZ(h273[1]!)), xyz).map { Int((encode(min(1, max(0, $0))) * 255).rounded()) }
        return (srgb[0], srgb[1], srgb[2])
    }
}
