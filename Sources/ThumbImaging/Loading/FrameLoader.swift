/// One loader interface for the formats whose libraries hand over a whole frame (WebP, GIF,
/// HEIF/AVIF, TIFF, JPEG XL), in libvips' manner: the header first (checked against limits before any pixel
/// buffer exists), then the pixels at the least resolution the plan allows — a shrink-on-load
/// hint in, pixels out. The thumbnailer does the rest (block shrink, Lanczos, colour,
/// orientation, mask) exactly as for JPEG and PNG.
///
/// A loader is used once, on one thread, and keeps the `SourceBytes` it reads alive.
protocol FrameLoader: AnyObject {
    /// Size of the full image in the frame `load` returns its pixels in, pixels. For HEIF this
    /// is the displayed image (libheif applies `irot`, `imir` and `clap` itself).
    var storedWidth: Int { get }
    var storedHeight: Int { get }
    /// What still has to be applied to show the frame upright (EXIF for WebP; `.up` for GIF, HEIF and JPEG XL).
    var orientation: Orientation { get }

    /// The frame, reduced by at most `maxShrink` along each axis (1 = full resolution): a
    /// scaled decode, an embedded thumbnail, or the full image; never smaller than
    /// `storedWidth / maxShrink` × `storedHeight / maxShrink`, and of the same aspect ratio
    /// within 1%. Checks `isCancelled` where the library allows.
    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame

    /// As `load(maxShrink:isCancelled:)`, told also the least reduction from the stored frame
    /// to any output, `outputShrink` (≥ `maxShrink`, which keeps the plan's margin below it). A
    /// loader whose reduced frame comes in fixed sizes (HEIF's embedded thumbnail) may return
    /// one down to the output's own size, `stored / outputShrink`, as libvips does.
    func load(maxShrink: Double, outputShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame
}

extension FrameLoader {
    func load(maxShrink: Double, outputShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        try load(maxShrink: maxShrink, isCancelled: isCancelled)
    }
}

/// A loader's pixels: 8-bit RGB or RGBA (straight alpha) in the stored frame.
struct LoadedFrame {
    var pixels: PixelBuffer
    /// The colour space of `pixels` when it is not sRGB (an embedded ICC profile, or one built
    /// from HEIF's nclx primaries); nil for sRGB.
    var iccProfile: [UInt8]?
    /// Data the decoder concealed (a truncated frame, say), one line; nil when clean.
    var warning: String?
    /// Stored-frame pixels per pixel of `pixels`, along each axis, when the loader reduced by a
    /// block factor whose last block is partial (`ceil(width / factor)` blocks): then
    /// `storedWidth / pixels.width` is not the scale, and using it would misplace the crop by up
    /// to a pixel of the frame (a visible shift in a small avatar). nil: the frame spans the
    /// stored image exactly (a full decode, or libwebp's scaled decode).
    var storedPixelsPerPixel: (x: Double, y: Double)? = nil
}

extension SourceFormat {
    /// The loader of a frame-at-once format; nil for JPEG and PNG, which stream rows.
    func frameLoader(_ source: SourceBytes, limits: ImageLimits,
                     isCancelled: CancellationCheck?) throws(ImagingError) -> (any FrameLoader)? {
        switch self {
        case .jpeg, .png: nil
        case .webp: try WebPLoader(source: source, limits: limits)
        case .gif: try GIFLoader(source: source, limits: limits)
        case .heif, .avif: try HEIFLoader(source: source, format: self, limits: limits)
        case .tiff: try TIFFLoader(source: source, limits: limits)
        case .jxl: try JXLLoader(source: source, limits: limits)
        case .mp4, .matroska, .avi: try VideoLoader(source: source, format: self, limits: limits, isCancelled: isCancelled)
        }
    }
}
