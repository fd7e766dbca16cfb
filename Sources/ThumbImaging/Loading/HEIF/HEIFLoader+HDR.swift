import CHeif

extension HEIFLoader {
    /// The signal of an image whose nclx names an HDR transfer (and no ICC profile overrides it),
    /// with the content's peak from its `clli` (MaxCLL) or, failing that, its mastering display.
    static func hdrSignal(of image: HEIFImageHandle, decoded: HEIFDecodedImage) -> HDRSignal? {
        let type = heif_image_handle_get_color_profile_type(image.handle)
        guard type != heif_color_profile_type_prof && type != heif_color_profile_type_rICC else { return nil }
        var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
        guard heif_image_handle_get_nclx_color_profile(image.handle, &nclx).isOK, let nclx else { return nil }
        defer { heif_nclx_color_profile_free(nclx) }
        let n = nclx.pointee
        guard let transfer = HDRTransfer(h273: Int(n.transfer_characteristics.rawValue)) else { return nil }
        let code = Int(n.color_primaries.rawValue)
        let coded = Chromaticities(white: (Double(n.color_primary_white_x), Double(n.color_primary_white_y)),
                                   red: (Double(n.color_primary_red_x), Double(n.color_primary_red_y)),
                                   green: (Double(n.color_primary_green_x), Double(n.color_primary_green_y)),
                                   blue: (Double(n.color_primary_blue_x), Double(n.color_primary_blue_y)))
        // Unspecified primaries (2) under an HDR transfer are BT.2020's, what HDR is graded in.
        let primaries = code == 2 ? .bt2020 : (Chromaticities.h273(code) ?? (coded.isPlausible ? coded : .bt2020))
        return HDRSignal(transfer: transfer, primaries: primaries, contentPeakNits: contentPeakNits(decoded))
    }

    private static func contentPeakNits(_ decoded: HEIFDecodedImage) -> Double? {
        if heif_image_has_content_light_level(decoded.image) != 0 {
            var level = heif_content_light_level()
            heif_image_get_content_light_level(decoded.image, &level)
            if level.max_content_light_level > 0 { return Double(level.max_content_light_level) }
        }
        if heif_image_has_mastering_display_colour_volume(decoded.image) != 0 {
            var volume = heif_mastering_display_colour_volume()
            heif_image_get_mastering_display_colour_volume(decoded.image, &volume)
            // Units of 0.0001 cd/m².
            if volume.max_display_mastering_luminance > 0 { return Double(volume.max_display_mastering_luminance) / 10_000 }
        }
        return nil
    }

    /// HDR planes to 8-bit sRGB(A) through `HDRToneMapper`, `reduction` × `reduction` blocks
    /// averaged in linear light; a premultiplied file's colour made straight first.
    static func toneMapped(_ decoded: HEIFDecodedImage, signal: HDRSignal, premultiplied: Bool, reduction: Int,
                           isCancelled: CancellationCheck?) throws(ImagingError) -> PixelBuffer {
        let planes = try planes(of: decoded)
        let mapper = HDRToneMapper(signal, maximumCode: Int(planes.colorMaximum), isLimitedRange: planes.isLimitedRange)
        let alphaMaximum = Int32(clamping: planes.alphaMaximum)
        func read<Sample: FixedWidthInteger & UnsignedInteger>(_: Sample.Type, _ y: Int, _ codes: UnsafeMutableBufferPointer<SIMD4<Int32>>) {
            func row(_ base: UnsafePointer<UInt8>, _ stride: Int) -> UnsafePointer<Sample> {
                UnsafeRawPointer(base + y * stride).assumingMemoryBound(to: Sample.self)
            }
            let red = row(planes.red, planes.redStride), green = row(planes.green, planes.greenStride)
            let blue = row(planes.blue, planes.blueStride)
            let alpha = planes.alpha.map { row($0, planes.alphaStride) }
            for x in 0..<planes.width {
                var code = SIMD4(Int32(red[x]), Int32(green[x]), Int32(blue[x]), alpha.map { Int32($0[x]) } ?? alphaMaximum)
                if premultiplied, code.w > 0, code.w < alphaMaximum {
                    // In Int: a 16-bit sample times a 16-bit maximum is past Int32.
                    let (alpha, top) = (Int(code.w), Int(alphaMaximum))
                    func straight(_ sample: Int32) -> Int32 { Int32(clamping: Int(sample) * top / alpha) }
                    code = SIMD4(straight(code.x), straight(code.y), straight(code.z), code.w)
                }
                codes[x] = code
            }
        }
        let pixels = mapper.toneMap(width: planes.width, height: planes.height, hasAlpha: planes.alpha != nil,
                                    alphaMaximum: Int(alphaMaximum), reduction: reduction, isCancelled: isCancelled) { y, codes in
            if planes.isWide { read(UInt16.self, y, codes) } else { read(UInt8.self, y, codes) }
        }
        guard let pixels else { throw .cancelled }
        return pixels
    }
}
