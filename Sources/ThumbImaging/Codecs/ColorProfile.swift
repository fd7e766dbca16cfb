import CThumbShim

/// A conversion from an embedded ICC profile to sRGB (Little CMS, perceptual intent).
/// Sendable: the shim builds it without lcms's one-pixel memo, so `apply` keeps no state and
/// any number of threads may use one transform at once (see `shared(profile:layout:)`).
final class ColorProfileTransform: @unchecked Sendable {
    /// `lab`: CIE L*a*b* in ICC's 8-bit encoding; its profile is lcms's own (D50), the bytes unread.
    enum Layout: Hashable { case rgb, rgba, cmyk, cmykInverted, lab }

    private let handle: OpaquePointer
    let layout: Layout

    /// nil when the profile is broken or does not describe pixels of `layout`: such images are
    /// taken as sRGB (or converted naively, for CMYK).
    init?(profile: [UInt8], layout: Layout) {
        let pixelLayout = switch layout {
        case .rgb: CThumb_PixelRGB8
        case .rgba: CThumb_PixelRGBA8
        case .cmyk: CThumb_PixelCMYK8
        case .cmykInverted: CThumb_PixelCMYK8Inverted
        case .lab: CThumb_PixelLab8
        }
        guard let handle = profile.withUnsafeBufferPointer({
            CThumb_ColorTransformCreate($0.baseAddress, $0.count, pixelLayout)
        }) else { return nil }
        self.handle = handle
        self.layout = layout
    }

    deinit { CThumb_ColorTransformDestroy(handle) }

    /// Converts `pixelCount` pixels; output is RGB (RGBA for `.rgba`). In-place is allowed
    /// when input and output have the same pixel size.
    func apply(input: UnsafePointer<UInt8>, output: UnsafeMutablePointer<UInt8>, pixelCount: Int) {
        CThumb_ColorTransformApply(handle, input, output, pixelCount)
    }

    /// Converts a whole RGB or RGBA buffer in place.
    func apply(to image: inout PixelBuffer) {
        let count = image.width * image.height
        image.bytes.withUnsafeMutableBufferPointer { bytes in
            apply(input: bytes.baseAddress!, output: bytes.baseAddress!, pixelCount: count)
        }
    }
}
