import CHeif
import CThumbShim

extension HEIFLoader {
    /// The colour space of the decoded pixels, as an ICC profile for the thumbnailer's lcms
    /// transform to sRGB (nil: sRGB already), and a note when part of it is not honoured.
    struct ColorDescription {
        var profile: [UInt8]?
        var warning: String?
    }

    /// An embedded ICC profile (`colr` of type `prof` or `rICC`) as it is; otherwise the nclx
    /// colour parameters. libheif has already applied nclx's matrix coefficients and range
    /// (YCbCr to RGB); what is left are the primaries and the transfer: BT.709/sRGB primaries
    /// (or unspecified) with an sRGB-like transfer are sRGB, anything else gets an ICC profile
    /// built for it (Display P3 = 12, BT.2020 = 9, a linear or pure-gamma transfer).
    ///
    /// HDR transfers (PQ = 16, HLG = 18) do not come here: `hdrSignal` sends them to the tone mapper.
    static func colorProfile(of image: HEIFImageHandle) -> ColorDescription {
        let type = heif_image_handle_get_color_profile_type(image.handle)
        if type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC {
            let size = heif_image_handle_get_raw_color_profile_size(image.handle)
            guard size > 0, size <= 64 << 20 else { return ColorDescription() }
            var bytes = [UInt8](repeating: 0, count: size)
            guard heif_image_handle_get_raw_color_profile(image.handle, &bytes).isOK else { return ColorDescription() }
            return ColorDescription(profile: bytes)
        }
        var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
        guard heif_image_handle_get_nclx_color_profile(image.handle, &nclx).isOK, let nclx else { return ColorDescription() }
        defer { heif_nclx_color_profile_free(nclx) }
        let n = nclx.pointee
        let coded = Chromaticities(white: (Double(n.color_primary_white_x), Double(n.color_primary_white_y)),
                                   red: (Double(n.color_primary_red_x), Double(n.color_primary_red_y)),
                                   green: (Double(n.color_primary_green_x), Double(n.color_primary_green_y)),
                                   blue: (Double(n.color_primary_blue_x), Double(n.color_primary_blue_y)))
        return nclxProfile(primaries: Int(n.color_primaries.rawValue), transfer: Int(n.transfer_characteristics.rawValue),
                           chromaticities: coded)
    }

    /// Transfer characteristics (ITU-T H.273) taken as the sRGB curve: sRGB itself (13), the
    /// BT.709 family (1, 6, 14, 15: what cameras and encoders write for SDR, and what browsers
    /// and libvips show as sRGB), xvYCC and BT.1361 (11, 12), and unspecified (2).
    static let sRGBLikeTransfers: Set<Int> = [1, 2, 6, 11, 12, 13, 14, 15]
    /// Pure power laws: linear (8), BT.470 System M (4, 2.2) and System B/G (5, 2.8).
    static let gammaTransfers: [Int: Double] = [8: 1.0, 4: 2.2, 5: 2.8]

    /// `chromaticities`: what libheif decoded for `primaries` (used unless those are 1 or 2).
    static func nclxProfile(primaries: Int, transfer: Int, chromaticities coded: Chromaticities) -> ColorDescription {
        let gamma = gammaTransfers[transfer]
        let standardPrimaries = primaries == 1 || primaries == 2
        if standardPrimaries && gamma == nil { return ColorDescription() }
        var chosen = Chromaticities.sRGB
        if !standardPrimaries {
            // Unknown primaries are taken as sRGB.
            guard coded.isPlausible else { return ColorDescription() }
            chosen = coded
        }
        let (white, red, green, blue) = ([chosen.white.x, chosen.white.y], [chosen.red.x, chosen.red.y],
                                         [chosen.green.x, chosen.green.y], [chosen.blue.x, chosen.blue.y])
        var profile: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = CThumb_ICCProfileFromPrimaries(white, red, green, blue, gamma == nil ? CThumb_CurveSRGB : CThumb_CurveGamma,
                                                    gamma ?? 0, &profile, &length)
        guard status == 0, let profile else { return ColorDescription() }
        defer { CThumb_Free(profile) }
        return ColorDescription(profile: Array(UnsafeBufferPointer(start: profile, count: length)))
    }
}
