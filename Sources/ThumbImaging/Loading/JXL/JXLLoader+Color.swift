import CJXL

extension JXLLoader {
    typealias ColorDescription = HEIFLoader.ColorDescription

    /// The HDR transfer of an encoded colour space (nil: SDR, or an ICC profile only). The one
    /// place that decides whether a JPEG XL goes the HDR way: decoded to 16 bits in its own
    /// encoding (never converted to sRGB by libjxl), for `HDRToneMapper`.
    static func hdrTransfer(of encoding: JxlColorEncoding?) -> HDRTransfer? {
        switch encoding?.transfer_function {
        case JXL_TRANSFER_FUNCTION_PQ: .pq
        case JXL_TRANSFER_FUNCTION_HLG: .hlg
        default: nil
        }
    }

    /// sRGB (or sRGB grey): what an XYB image is asked to decode to.
    static func sRGBEncoding(gray: Bool) -> JxlColorEncoding {
        var encoding = JxlColorEncoding()
        encoding.color_space = gray ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB
        encoding.white_point = JXL_WHITE_POINT_D65
        encoding.white_point_xy = (0.3127, 0.3290)
        encoding.primaries = JXL_PRIMARIES_SRGB
        encoding.primaries_red_xy = (0.64, 0.33)
        encoding.primaries_green_xy = (0.30, 0.60)
        encoding.primaries_blue_xy = (0.15, 0.06)
        encoding.transfer_function = JXL_TRANSFER_FUNCTION_SRGB
        encoding.rendering_intent = JXL_RENDERING_INTENT_RELATIVE
        return encoding
    }

    /// The colour space of the decoded pixels (libjxl's `TARGET_DATA`) as the ICC profile the
    /// thumbnailer converts from; nil for sRGB. Read once the header is in, after `readHeader`
    /// set the sRGB preference.
    ///
    /// - An encoded sRGB space (the usual XYB result): nil.
    /// - HDR: sRGB, which the tone mapper makes of it.
    /// - Grey in another encoded space: RGB pixels (libjxl expanded them), so a grey ICC profile
    ///   would not apply; a linear or pure-gamma grey becomes an RGB profile of that curve.
    /// - Anything else: libjxl's ICC profile (the file's own, or one it builds from the encoding).
    ///   A CMYK profile (K as an extra channel) is refused: libjxl 0.7 hands out CMY only.
    static func colorDescription(_ decoder: JXLDecoder, hdr: HDRTransfer?, isGray: Bool,
                                 maxICCBytes: Int) throws(ImagingError) -> ColorDescription {
        var data = JxlColorEncoding()
        if JxlDecoderGetColorAsEncodedProfile(decoder.handle, nil, JXL_COLOR_PROFILE_TARGET_DATA, &data) == JXL_DEC_SUCCESS {
            let srgbCurve = 13, linear = 8
            // HDR is tone-mapped to sRGB by the loader.
            if hdr != nil { return ColorDescription() }
            let isD65 = data.white_point == JXL_WHITE_POINT_D65
            let isSRGBPrimaries = isGray || data.primaries == JXL_PRIMARIES_SRGB
            if isD65 && isSRGBPrimaries && data.transfer_function == JXL_TRANSFER_FUNCTION_SRGB { return ColorDescription() }
            if isGray {
                let transfer = switch data.transfer_function {
                case JXL_TRANSFER_FUNCTION_LINEAR: linear
                case JXL_TRANSFER_FUNCTION_GAMMA: gammaTransferCode(encodingExponent: data.gamma) ?? srgbCurve
                default: srgbCurve
                }
                return HEIFLoader.nclxProfile(primaries: 1, transfer: transfer, chromaticities: .sRGB)
            }
        }
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder.handle, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
              size > 0 else { return ColorDescription() }
        guard size <= maxICCBytes else {
            return ColorDescription(warning: "JPEG XL: an ICC profile of \(size) bytes (over \(maxICCBytes)) ignored, "
                                    + "colours taken as sRGB")
        }
        var profile = [UInt8](repeating: 0, count: size)
        guard JxlDecoderGetColorAsICCProfile(decoder.handle, nil, JXL_COLOR_PROFILE_TARGET_DATA, &profile, size) == JXL_DEC_SUCCESS else {
            return ColorDescription(warning: "JPEG XL: libjxl could not return the ICC profile, colours taken as sRGB")
        }
        // The profile's data colour space, bytes 16–19 of its header.
        if size >= 20, Array(profile[16..<20]) == Array("CMYK".utf8) {
            throw .unsupportedFormat(reason: "JPEG XL: a CMYK image (K as an extra channel) is not supported")
        }
        return ColorDescription(profile: isGray ? nil : profile)
    }

    /// H.273's pure-power transfers, from JPEG XL's encoding exponent (1/2.2 for a 2.2 display gamma).
    static func gammaTransferCode(encodingExponent: Double) -> Int? {
        guard encodingExponent > 0 else { return nil }
        let displayGamma = 1 / encodingExponent
        return HEIFLoader.gammaTransfers.first { abs($0.value - displayGamma) < 0.01 }?.key
    }

    static func chromaticities(of encoding: JxlColorEncoding) -> Chromaticities {
        Chromaticities(white: (encoding.white_point_xy.0, encoding.white_point_xy.1),
                                  red: (encoding.primaries_red_xy.0, encoding.primaries_red_xy.1),
                                  green: (encoding.primaries_green_xy.0, encoding.primaries_green_xy.1),
                                  blue: (encoding.primaries_blue_xy.0, encoding.primaries_blue_xy.1))
    }

    /// The HDR signal of an encoded colour space with a PQ or HLG transfer: its primaries, and
    /// the content's peak from the intensity target unless that is PQ's ceiling (10,000 cd/m²,
    /// what encoders write when they know no better; the tone mapper then takes 1,000).
    static func hdrSignal(_ transfer: HDRTransfer, encoding: JxlColorEncoding, intensityTarget: Float) -> HDRSignal {
        let primaries: Chromaticities = switch encoding.primaries {
        case JXL_PRIMARIES_SRGB: .sRGB
        case JXL_PRIMARIES_2100: .bt2020
        case JXL_PRIMARIES_P3: .displayP3
        default: chromaticities(of: encoding).isPlausible ? chromaticities(of: encoding) : .bt2020
        }
        let peak = Double(intensityTarget)
        return HDRSignal(transfer: transfer, primaries: encoding.color_space == JXL_COLOR_SPACE_GRAY ? .sRGB : primaries,
                         contentPeakNits: peak.isFinite && peak > 0 && peak < 10_000 ? peak : nil)
    }
}
