import CHeif

extension HEIFLoader {
    /// The planes of a decoded planar RGB (4:4:4) image, checked to be what was asked for.
    struct Planes {
        var red, green, blue: UnsafePointer<UInt8>
        var alpha: UnsafePointer<UInt8>?
        /// Bytes from one row of a plane to the next (each plane its own).
        var redStride, greenStride, blueStride, alphaStride: Int
        var width, height: Int
        /// 16-bit samples (10- and 12-bit files) rather than bytes.
        var isWide: Bool
        /// The largest sample value: 255, 1023, 4095…
        var colorMaximum, alphaMaximum: UInt64
        /// Gray samples in video range (16–235 at 8 bits), to stretch to full range: libheif
        /// 1.15 hands a monochrome image over as its Y plane (its own conversion to RGB would copy
        /// Y without the stretch, a washed-out gray; Pillow's libavif stretches).
        var isLimitedRange = false
    }

    static func planes(of decoded: HEIFDecodedImage) throws(ImagingError) -> Planes {
        let image = decoded.image
        func plane(_ channel: heif_channel) -> (base: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, storage: Int, range: Int)? {
            guard heif_image_has_channel(image, channel) != 0 else { return nil }
            var stride: Int32 = 0
            guard let base = heif_image_get_plane_readonly(image, channel, &stride), stride > 0 else { return nil }
            return (base, Int(stride), Int(heif_image_get_width(image, channel)), Int(heif_image_get_height(image, channel)),
                    Int(heif_image_get_bits_per_pixel(image, channel)), Int(heif_image_get_bits_per_pixel_range(image, channel)))
        }
        let isGray = heif_image_get_colorspace(image) == heif_colorspace_monochrome
        let color = isGray ? plane(heif_channel_Y).map { ($0, $0, $0) }
            : plane(heif_channel_R).flatMap { red in plane(heif_channel_G).flatMap { green in plane(heif_channel_B).map { (red, green, $0) } } }
        guard let (red, green, blue) = color else {
            throw .undecodable(reason: "libheif returned no RGB or gray planes")
        }
        let alpha = plane(heif_channel_Alpha)
        let all = [red, green, blue] + (alpha.map { [$0] } ?? [])
        let storage = red.storage
        let fits = all.allSatisfy { plane in
            plane.width == red.width && plane.height == red.height && plane.storage == storage
                && (1...16).contains(plane.range) && plane.stride >= plane.width * (storage / 8)
        }
        guard red.width > 0, red.height > 0, storage == 8 || storage == 16, fits,
              red.range == green.range, red.range == blue.range else {
            throw .undecodable(reason: "libheif returned planes of unexpected sizes or depths")
        }
        var isLimitedRange = false
        if isGray {
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
            if heif_image_get_nclx_color_profile(image, &nclx).isOK, let nclx {
                isLimitedRange = nclx.pointee.full_range_flag == 0
                heif_nclx_color_profile_free(nclx)
            }
        }
        return Planes(red: red.base, green: green.base, blue: blue.base, alpha: alpha?.base,
                      redStride: red.stride, greenStride: green.stride, blueStride: blue.stride, alphaStride: alpha?.stride ?? 0,
                      width: red.width, height: red.height, isWide: storage == 16,
                      colorMaximum: (1 << UInt64(red.range)) - 1, alphaMaximum: (1 << UInt64(alpha?.range ?? 8)) - 1,
                      isLimitedRange: isLimitedRange)
    }

    /// Interleaves planar RGB(A) into 8-bit RGB(A), straight alpha, averaging `reduction` ×
    /// `reduction` blocks (partial at the right and bottom edges) and rounding deeper samples to
    /// 8 bits (libheif 1.15's own reduction to 8 bits drops the low bits of the YCbCr samples
    /// before converting, a bias of half a level and more banding). Colour is averaged weighted
    /// by alpha, as the thumbnailer's block shrink does; premultiplied files are made straight.
    static func interleave(_ decoded: HEIFDecodedImage, premultiplied: Bool, reduction: Int,
                           isCancelled: CancellationCheck?) throws(ImagingError) -> PixelBuffer {
        let planes = try planes(of: decoded)
        let result = planes.isWide
            ? interleave(UInt16.self, planes, premultiplied: premultiplied, reduction: reduction, isCancelled: isCancelled)
            : interleave(UInt8.self, planes, premultiplied: premultiplied, reduction: reduction, isCancelled: isCancelled)
        guard let result else { throw .cancelled }
        return result
    }

    /// nil when cancelled.
    private static func interleave<Sample: FixedWidthInteger & UnsignedInteger>(
        _: Sample.Type, _ planes: Planes, premultiplied: Bool, reduction: Int, isCancelled: CancellationCheck?
    ) -> PixelBuffer? {
        let factor = max(1, reduction)
        let (width, height) = (planes.width, planes.height)
        let outputWidth = (width + factor - 1) / factor
        let outputHeight = (height + factor - 1) / factor
        let hasAlpha = planes.alpha != nil
        let channels = hasAlpha ? 4 : 3
        let colorMaximum = planes.colorMaximum, alphaMaximum = planes.alphaMaximum
        // A sample of `numerator / denominator` (source units) as a byte, rounded; video range
        // (16–235 scaled to the depth) stretched to 0–255 and clipped.
        let scale = Int64((colorMaximum + 1) / 256)
        let isLimited = planes.isLimitedRange && scale > 0
        func byte(_ numerator: UInt64, _ denominator: UInt64) -> UInt8 {
            if isLimited {
                let span = Int64(denominator) * 219 * scale
                let value = (Int64(numerator) - Int64(denominator) * 16 * scale) * 255 + span / 2
                return UInt8(min(255, max(0, value >= 0 ? value / span : 0)))
            }
            return UInt8(min(255, (numerator &* 255 &+ denominator &* colorMaximum / 2) / (denominator &* colorMaximum)))
        }
        func row(_ base: UnsafePointer<UInt8>, _ stride: Int, _ y: Int) -> UnsafePointer<Sample> {
            UnsafeRawPointer(base + y * stride).assumingMemoryBound(to: Sample.self)
        }
        var output = [UInt8](repeating: 0, count: outputWidth * outputHeight * channels)
        var sums = [SIMD4<UInt64>](repeating: .zero, count: outputWidth)
        var cancelled = false
        output.withUnsafeMutableBufferPointer { out in
            sums.withUnsafeMutableBufferPointer { sums in
                for outputY in 0..<outputHeight {
                    if outputY & 15 == 0, isCancelled?() == true {
                        cancelled = true
                        return
                    }
                    let top = outputY * factor, bottom = min(top + factor, height)
                    for index in 0..<outputWidth { sums[index] = .zero }
                    for y in top..<bottom {
                        let red = row(planes.red, planes.redStride, y)
                        let green = row(planes.green, planes.greenStride, y)
                        let blue = row(planes.blue, planes.blueStride, y)
                        let alpha = planes.alpha.map { row($0, planes.alphaStride, y) }
                        for block in 0..<outputWidth {
                            var sum = sums[block]
                            for x in (block * factor)..<min(block * factor + factor, width) {
                                let color = SIMD4(UInt64(red[x]), UInt64(green[x]), UInt64(blue[x]), 0)
                                if let alpha {
                                    let opacity = UInt64(alpha[x])
                                    // Σ colour × alpha either way: a premultiplied sample is already colour × alpha / max.
                                    let weight = premultiplied ? alphaMaximum : opacity
                                    sum &+= color &* SIMD4(repeating: weight) &+ SIMD4(0, 0, 0, opacity)
                                } else {
                                    sum &+= color
                                }
                            }
                            sums[block] = sum
                        }
                    }
                    BlockSums.storeRow(sums, rows: bottom - top, width: width, factor: factor, hasAlpha: hasAlpha,
                                       alphaMaximum: alphaMaximum, into: out, at: outputY * outputWidth * channels, byte: byte)
                }
            }
        }
        if cancelled { return nil }
        return PixelBuffer(width: outputWidth, height: outputHeight, channels: channels, bytes: output)
    }
}
