/// The loader interface every format implements, as libvips' loaders do: the header first (size
/// and orientation, so that limits and the plan come before any pixel), then a shrink-on-load
/// hint in and 8-bit rows out. `Thumbnailer.renderRows` is the one loop over it; each format's
/// speed tricks (DCT scaling and DC-only progressive scans, column crops, a scaled or embedded
/// frame) stay behind its source.
protocol RowSource: AnyObject {
    var storedWidth: Int { get }
    var storedHeight: Int { get }
    /// What still has to be applied to show the frame upright.
    var orientation: Orientation { get }
    /// How the source reduces while it decodes.
    var shrinkOnLoad: ShrinkOnLoad { get }
    /// An output with no block to shrink takes the rows straight into Lanczos (`RowResampler`),
    /// and an attention crop keeps the decoded frame (`FrameRows`). Otherwise every output
    /// block-shrinks first (factor 1 too) and Lanczos runs on the result.
    var streamsRowsIntoLanczos: Bool { get }
    /// Starts the decode as reduced as `hint` allows. Returns the rows' frame.
    func start(_ hint: LoadHint) throws(ImagingError) -> RowFrame
    /// Decodes only the columns `wanted` of each row from now on; the columns each row then holds
    /// (at least `wanted`), or nil when the source cannot (its rows stay whole).
    func cropColumns(_ wanted: Range<Int>) throws(ImagingError) -> Range<Int>?
    /// The next rows (at most `maxRows`, `RowFrame.channels` bytes a pixel) into `destination`,
    /// `rowStride` apart. 0 at the end.
    func readRows(into destination: UnsafeMutablePointer<UInt8>, rowStride: Int, maxRows: Int) throws(ImagingError) -> Int
    /// After the last row: the transform from the rows' colour space to sRGB (nil: sRGB already).
    func colourTransform() throws(ImagingError) -> ColorProfileTransform?
    /// What the decode concealed, one line; nil when clean. After the last row.
    var warning: String? { get }
    /// Bytes of a progressive JPEG's scans that the decode skipped.
    var skippedScanBytes: Int { get }
}

enum ShrinkOnLoad {
    /// None: every row at full size (PNG).
    case none
    /// libjpeg's scaled IDCT: 1/1, 1/2, 1/4 or 1/8, the largest every output keeps its margin at.
    case dctScale
    /// The loader's own reduced frame (a scaled decode, an embedded thumbnail), at most `maxShrink`.
    case frame
}

/// The shrink-on-load hint: what the plan allows the source to reduce by.
struct LoadHint {
    /// For `.dctScale`.
    var dctDenominator = 1
    /// For `.frame`: the largest reduction each output still keeps its margin after, and the
    /// least reduction from the stored frame to any output (see `FrameLoader.load`).
    var maxShrink = 1.0
    var outputShrink = 1.0
}

/// The rows a source started: their size, channels (3 RGB, 4 RGBA with straight alpha) and how
/// many stored-frame pixels each decoded pixel stands for along each axis.
struct RowFrame {
    var width: Int
    var height: Int
    var channels: Int
    var storedPixelsPerPixelX = 1.0
    var storedPixelsPerPixelY = 1.0
}
