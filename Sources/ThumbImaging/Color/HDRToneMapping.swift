import Foundation

/// The HDR transfers of BT.2100 (ITU-T H.273 codes), as HEIF/AVIF `nclx`, PNG `cICP` and JPEG XL
/// colour encodings name them.
package enum HDRTransfer: Sendable, Equatable {
    /// SMPTE ST 2084 (PQ): absolute display light, 0–10,000 cd/m².
    case pq
    /// ARIB STD-B67 (HLG): relative scene light, shown through BT.2100's OOTF.
    case hlg

    init?(h273 code: Int) {
        switch code {
        case 16: self = .pq
        case 18: self = .hlg
        default: return nil
        }
    }

    var name: String { self == .pq ? "PQ" : "HLG" }
}

/// What a decoder knows of an HDR signal: its transfer, its primaries (nil: BT.2020, what HDR
/// is coded in unless said otherwise) and the brightest light its content reaches, when the file
/// says (a `clli` MaxCLL, a mastering display's peak, JPEG XL's intensity target).
package struct HDRSignal: Sendable, Equatable {
    var transfer: HDRTransfer
    var primaries: Chromaticities?
    var contentPeakNits: Double?
}

/// HDR to SDR for a thumbnail: BT.2100 PQ or HLG samples to linear BT.709 light relative to SDR
/// white, which the loader averages (its block reduction) and encodes with the sRGB curve, so the
/// resampler never sees an HDR value.
///
/// The operator is BT.2408's and BT.2390's, as libplacebo and ffmpeg's `tonemap=bt2390` use them:
/// - Light: PQ's EOTF gives display light in cd/m²; HLG's inverse OETF gives scene light, and
///   BT.2100's OOTF for a 1,000-cd/m² display (system gamma 1.2, on the BT.2020 luminance)
///   makes it display light, so HLG's reference white (75% signal) lands at 203 cd/m².
/// - Highlights: BT.2390's EETF (a Hermite knee in the PQ domain) compresses the range from black
///   to the content's peak into black to BT.2408's HDR reference white, 203 cd/m², which becomes
///   SDR white (1.0). It is applied to the brightest of R, G and B and every channel is scaled by
///   the same gain, so hues stay and no channel clips before the others. The content's peak is the
///   file's when it says (MaxCLL, the mastering display), else 1,000 cd/m² (BT.2408's typical
///   grading peak; PQ's 10,000 would flatten every mid-tone of a file that never goes there).
/// - Gamut: a 3×3 matrix from the source primaries to BT.709 in linear light; a colour outside
///   BT.709 is moved towards its own luminance until its least channel is 0 (a desaturation
///   that keeps luminance and hue, where clipping each channel would shift the hue).
struct HDRToneMapper {
    static let referenceWhiteNits = 203.0
    static let defaultPeakNits = 1000.0
    static let hlgDisplayPeakNits = 1000.0

    let transfer: HDRTransfer
    /// Peak of the source's range, cd/m² (≥ reference white).
    let sourcePeakNits: Double
    /// The largest code of the samples (1023 for 10 bits) and whether codes are video range.
    let maximumCode: Int
    let isLimitedRange: Bool
    /// Source linear RGB to BT.709 linear RGB, rows.
    let toBT709: (SIMD3<Float>, SIMD3<Float>, SIMD3<Float>)
    /// PQ: display light of each code, in units of reference white.
    private let lightOfCode: [Float]
    /// HLG: scene light of each code, 0–1.
    private let sceneLightOfCode: [Float]

    init(_ signal: HDRSignal, maximumCode: Int, isLimitedRange: Bool = false) {
        transfer = signal.transfer
        let peak = signal.contentPeakNits.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? Self.defaultPeakNits
        sourcePeakNits = min(10_000, max(Self.referenceWhiteNits, transfer == .hlg ? Self.hlgDisplayPeakNits : peak))
        let top = max(1, min(maximumCode, 65_535))
        self.maximumCode = top
        self.isLimitedRange = isLimitedRange
        toBT709 = Self.matrixToBT709(from: signal.primaries ?? .bt2020)
        let signalOfCode = (0...top).map { Self.signal(code: $0, maximumCode: top, isLimitedRange: isLimitedRange) }
        switch transfer {
        case .pq:
            lightOfCode = signalOfCode.map { Float(Self.pqEOTF($0) / Self.referenceWhiteNits) }
            sceneLightOfCode = []
        case .hlg:
            lightOfCode = []
            sceneLightOfCode = signalOfCode.map { Float(Self.hlgInverseOETF($0)) }
        }
    }

    /// The non-linear signal 0–1 of a code.
    static func signal(code: Int, maximumCode: Int, isLimitedRange: Bool) -> Double {
        let unit = Double(code) / Double(maximumCode)
        guard isLimitedRange else { return unit }
        return min(1, max(0, (unit - 16.0 / 255) / (219.0 / 255)))
    }

    /// One pixel's codes (clamped to the code range) to linear BT.709, 0–1 relative to SDR white.
    @inline(__always)
    func linearBT709(_ red: Int, _ green: Int, _ blue: Int) -> SIMD3<Float> {
        let top = maximumCode
        let (r, g, b) = (min(max(red, 0), top), min(max(green, 0), top), min(max(blue, 0), top))
        var light: SIMD3<Float>
        switch transfer {
        case .pq:
            light = SIMD3(lightOfCode[r], lightOfCode[g], lightOfCode[b])
        case .hlg:
            let scene = SIMD3(sceneLightOfCode[r], sceneLightOfCode[g], sceneLightOfCode[b])
            // BT.2100 OOTF: Fd = α · Ys^(γ−1) · E, with BT.2020's luminance weights.
            let sceneLuminance = (scene * SIMD3(0.2627, 0.6780, 0.0593)).sum()
            let gain = sceneLuminance > 0 ? powf(sceneLuminance, 0.2) : 0
            light = scene * (gain * Float(Self.hlgDisplayPeakNits / Self.referenceWhiteNits))
        }
        let brightest = light.max()
        if brightest > 0 {
            light *= Float(eetf(Double(brightest) * Self.referenceWhiteNits) / (Double(brightest) * Self.referenceWhiteNits))
        }
        var mapped = SIMD3((toBT709.0 * light).sum(), (toBT709.1 * light).sum(), (toBT709.2 * light).sum())
        let least = mapped.min()
        if least < 0 {
            let luminance = max(0, (mapped * SIMD3(0.2126, 0.7152, 0.0722)).sum())
            let keep = luminance > 0 ? luminance / (luminance - least) : 0
            mapped = SIMD3(repeating: luminance) + (mapped - SIMD3(repeating: luminance)) * keep
        }
        return mapped.clamped(lowerBound: .zero, upperBound: SIMD3(repeating: 1))
    }

    /// A frame of codes (`readRow` fills row y's RGBA codes, alpha `alphaMaximum` when opaque)
    /// to 8-bit sRGB(A), averaging `reduction` × `reduction` blocks (partial at the right and
    /// bottom) in linear light, colour weighted by alpha. nil when cancelled.
    func toneMap(width: Int, height: Int, hasAlpha: Bool, alphaMaximum: Int, reduction: Int, isCancelled: CancellationCheck?,
                 readRow: (Int, UnsafeMutableBufferPointer<SIMD4<Int32>>) -> Void) -> PixelBuffer? {
        let factor = max(1, reduction)
        let outputWidth = (width + factor - 1) / factor, outputHeight = (height + factor - 1) / factor
        let channels = hasAlpha ? 4 : 3
        let opacityScale = 1 / Float(max(1, alphaMaximum))
        var output = [UInt8](repeating: 0, count: outputWidth * outputHeight * channels)
        // Σ linear colour × opacity and Σ opacity, per block of the current row of blocks.
        var sums = [SIMD4<Float>](repeating: .zero, count: outputWidth)
        var codes = [SIMD4<Int32>](repeating: .zero, count: width)
        for outputY in 0..<outputHeight {
            if outputY & 15 == 0, isCancelled?() == true { return nil }
            let top = outputY * factor, bottom = min(top + factor, height)
            for index in 0..<outputWidth { sums[index] = .zero }
            for y in top..<bottom {
                codes.withUnsafeMutableBufferPointer { readRow(y, $0) }
                for x in 0..<width {
                    let code = codes[x]
                    let opacity = hasAlpha ? Float(code.w) * opacityScale : 1
                    let light = linearBT709(Int(code.x), Int(code.y), Int(code.z))
                    sums[x / factor] += SIMD4(light * opacity, opacity)
                }
            }
            let rows = Float(bottom - top)
            var at = outputY * outputWidth * channels
            for block in 0..<outputWidth {
                let count = rows * Float(min(block * factor + factor, width) - block * factor)
                let sum = sums[block]
                let colour = sum.w > 0 ? SIMD3(sum.x, sum.y, sum.z) / sum.w : .zero
                output[at] = SRGBEncoding.byte(colour.x)
                output[at + 1] = SRGBEncoding.byte(colour.y)
                output[at + 2] = SRGBEncoding.byte(colour.z)
                if hasAlpha { output[at + 3] = UInt8(min(255, max(0, (sum.w / count * 255).rounded()))) }
                at += channels
            }
        }
        return PixelBuffer(width: outputWidth, height: outputHeight, channels: channels, bytes: output)
    }

    /// BT.2390's EETF from [0, sourcePeak] to [0, reference white], cd/m² in and out.
    func eetf(_ nits: Double) -> Double {
        let sourcePQ = Self.pqInverseEOTF(sourcePeakNits)
        let e1 = min(1, Self.pqInverseEOTF(nits) / sourcePQ)
        let maxLuminance = Self.pqInverseEOTF(Self.referenceWhiteNits) / sourcePQ
        let kneeStart = 1.5 * maxLuminance - 0.5
        var e2 = e1
        if e1 > kneeStart && kneeStart < 1 {
            let t = (e1 - kneeStart) / (1 - kneeStart)
            let (t2, t3) = (t * t, t * t * t)
            e2 = (2 * t3 - 3 * t2 + 1) * kneeStart + (t3 - 2 * t2 + t) * (1 - kneeStart) + (-2 * t3 + 3 * t2) * maxLuminance
        }
        return Self.pqEOTF(e2 * sourcePQ)
    }

    // SMPTE ST 2084 constants.
    static let m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128, c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32

    /// PQ signal 0–1 to cd/m².
    static func pqEOTF(_ signal: Double) -> Double {
        let p = pow(min(1, max(0, signal)), 1 / m2)
        return 10_000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
    }

    /// cd/m² to PQ signal 0–1.
    static func pqInverseEOTF(_ nits: Double) -> Double {
        let y = pow(min(1, max(0, nits / 10_000)), m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    /// HLG signal 0–1 to scene light 0–1 (BT.2100 table 5).
    static func hlgInverseOETF(_ signal: Double) -> Double {
        let (a, b, c) = (0.17883277, 0.28466892, 0.55991073)
        let e = min(1, max(0, signal))
        return e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
    }

    /// The linear-light matrix from `source` primaries to BT.709's (both taken at D65: every
    /// HDR primaries set in use is).
    static func matrixToBT709(from source: Chromaticities) -> (SIMD3<Float>, SIMD3<Float>, SIMD3<Float>) {
        let toXYZ = source.rgbToXYZ(), fromXYZ = Chromaticities.sRGB.rgbToXYZ().inverse()
        let m = fromXYZ.multiplied(by: toXYZ)
        return (SIMD3(Float(m[0][0]), Float(m[0][1]), Float(m[0][2])), SIMD3(Float(m[1][0]), Float(m[1][1]), Float(m[1][2])),
                SIMD3(Float(m[2][0]), Float(m[2][1]), Float(m[2][2])))
    }
}

/// CIE 1931 xy of the white point and the primaries.
struct Chromaticities: Sendable, Equatable {
    var white, red, green, blue: Point

    struct Point: Sendable, Equatable {
        var x: Double
        var y: Double
    }

    init(white: (Double, Double), red: (Double, Double), green: (Double, Double), blue: (Double, Double)) {
        self.white = Point(x: white.0, y: white.1)
        self.red = Point(x: red.0, y: red.1)
        self.green = Point(x: green.0, y: green.1)
        self.blue = Point(x: blue.0, y: blue.1)
    }

    /// BT.709 / sRGB, D65.
    static let sRGB = Chromaticities(white: (0.3127, 0.3290), red: (0.64, 0.33), green: (0.30, 0.60), blue: (0.15, 0.06))
    /// BT.2020 / BT.2100, D65.
    static let bt2020 = Chromaticities(white: (0.3127, 0.3290), red: (0.708, 0.292), green: (0.170, 0.797), blue: (0.131, 0.046))
    /// Display P3 (SMPTE EG 432-1), D65.
    static let displayP3 = Chromaticities(white: (0.3127, 0.3290), red: (0.680, 0.320), green: (0.265, 0.690), blue: (0.150, 0.060))

    /// Within the diagram: libheif decodes the primaries it knows, an unknown code leaves zeros.
    var isPlausible: Bool {
        let points: [Point] = [white, red, green, blue]
        return points.allSatisfy { (point: Point) -> Bool in point.x > 0 && point.x < 1 && point.y > 0 && point.y < 1 }
    }

    /// The H.273 colour primaries this library knows by code (1 BT.709, 9 BT.2020, 12 P3); nil otherwise.
    static func h273(_ code: Int) -> Chromaticities? {
        switch code {
        case 1: .sRGB
        case 9: .bt2020
        case 12: .displayP3
        default: nil
        }
    }

    /// Linear RGB to XYZ (rows), white normalised to Y = 1.
    func rgbToXYZ() -> Matrix3 {
        func xyz(_ p: Point) -> [Double] { [p.x / p.y, 1, (1 - p.x - p.y) / p.y] }
        let (r, g, b, w) = (xyz(red), xyz(green), xyz(blue), xyz(white))
        let primaries = Matrix3(rows: [[r[0], g[0], b[0]], [r[1], g[1], b[1]], [r[2], g[2], b[2]]])
        let scale = primaries.inverse().applied(to: w)
        return Matrix3(rows: (0..<3).map { row in (0..<3).map { primaries.rows[row][$0] * scale[$0] } })
    }
}

/// A 3×3 matrix of rows, for the few colour conversions built once per decode.
struct Matrix3: Equatable {
    var rows: [[Double]]

    subscript(row: Int) -> [Double] { rows[row] }

    func multiplied(by other: Matrix3) -> Matrix3 {
        Matrix3(rows: (0..<3).map { i in (0..<3).map { j in (0..<3).reduce(0) { $0 + rows[i][$1] * other.rows[$1][j] } } })
    }

    func applied(to vector: [Double]) -> [Double] {
        (0..<3).map { i in (0..<3).reduce(0) { $0 + rows[i][$1] * vector[$1] } }
    }

    /// The inverse (the identity for a singular matrix: primaries on one line name no colour space).
    func inverse() -> Matrix3 {
        let m = rows
        let minor0: Double = m[1][1] * m[2][2] - m[1][2] * m[2][1]
        let minor1: Double = m[1][0] * m[2][2] - m[1][2] * m[2][0]
        let minor2: Double = m[1][0] * m[2][1] - m[1][1] * m[2][0]
        let det: Double = m[0][0] * minor0 - m[0][1] * minor1 + m[0][2] * minor2
        guard det.isFinite, abs(det) > 1e-12 else { return Matrix3(rows: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) }
        let cofactors: [[Double]] = [
            [m[1][1] * m[2][2] - m[1][2] * m[2][1], m[0][2] * m[2][1] - m[0][1] * m[2][2], m[0][1] * m[1][2] - m[0][2] * m[1][1]],
            [m[1][2] * m[2][0] - m[1][0] * m[2][2], m[0][0] * m[2][2] - m[0][2] * m[2][0], m[0][2] * m[1][0] - m[0][0] * m[1][2]],
            [m[1][0] * m[2][1] - m[1][1] * m[2][0], m[0][1] * m[2][0] - m[0][0] * m[2][1], m[0][0] * m[1][1] - m[0][1] * m[1][0]],
        ]
        return Matrix3(rows: cofactors.map { $0.map { $0 / det } })
    }
}

/// Linear light 0–1 to an 8-bit sRGB code, through a table fine enough that the steepest part of
/// the curve (near black) rounds as the formula does to within a fifth of a level.
enum SRGBEncoding {
    static let steps = 16_384
    static let table: [UInt8] = (0...steps).map { index in
        let linear = Double(index) / Double(steps)
        let encoded = linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
        return UInt8(min(255, max(0, (encoded * 255).rounded())))
    }

    @inline(__always)
    static func byte(_ linear: Float) -> UInt8 {
        let clamped = min(1, max(0, linear.isNaN ? 0 : linear))
        return table[Int(clamped * Float(steps) + 0.5)]
    }
}
