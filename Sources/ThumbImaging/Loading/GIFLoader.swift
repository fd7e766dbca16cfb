import CGIF

/// The first frame of a GIF, composited as a browser shows it, through giflib's record API
/// (never `DGifSlurp`, which decodes every frame of an animation into memory).
///
/// `init` reads the logical screen, walks the records up to the first image (bounded: see
/// `walkToFirstImage`) and reads that image's descriptor and colour map, checking every size
/// against the limits before giflib reads on. `load` decodes that image's rows onto the canvas.
///
/// The canvas is the union of the logical screen and the first frame, anchored at (0, 0): what
/// Chromium (its GIF reader, and Wuffs by default) and Pillow show for a first frame that
/// reaches past the screen; Firefox instead moves such a frame to (0, 0) and takes its size.
/// It starts fully transparent (no disposal happened before the first frame, and the
/// background colour is not painted, as in browsers).
final class GIFLoader: FrameLoader {
    /// The canvas, pixels.
    let storedWidth: Int
    let storedHeight: Int
    /// GIF has no orientation.
    var orientation: Orientation { .up }

    /// Where the first frame lies on the canvas, and how it is stored.
    struct FirstFrame: Equatable {
        var left: Int
        var top: Int
        var width: Int
        var height: Int
        var interlaced: Bool
        /// The Graphic Control Extension's transparent colour index, nil when it names none.
        var transparentIndex: Int?
        /// An LZW minimum code size over 8 (9–11), which `GIFWideCodeDecoder` decodes; nil for giflib's.
        var wideCodeSize: Int? = nil

        /// Whether the frame covers the whole canvas (it always lies inside it).
        func covers(width canvasWidth: Int, height canvasHeight: Int) -> Bool {
            left == 0 && top == 0 && width == canvasWidth && height == canvasHeight
        }
    }

    let frame: FirstFrame
    /// 256 RGBA entries: the local or global colour map (entries past its end opaque black, as
    /// Pillow and browsers show an index the map lacks), or Pillow's greyscale ramp when the
    /// file has neither map; the transparent index is transparent black.
    let palette: [UInt8]
    private let file: UnsafeMutablePointer<GifFileType>
    private let input: GIFInput // giflib reads through it: kept alive with the handle
    private let wideCodes: GIFWideCodeDecoder?
    private var frameRead = false

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        let input = GIFInput(source)
        var code: Int32 = D_GIF_SUCCEEDED
        guard let file = DGifOpen(input.pointer, GIFInput.read, &code) else {
            throw .undecodable(reason: GIFReason.describe("header", code: code, input: input))
        }
        let canvas: (width: Int, height: Int)
        let frame: FirstFrame
        do throws(ImagingError) {
            let screenWidth = Int(file.pointee.SWidth), screenHeight = Int(file.pointee.SHeight)
            // A zero-sized screen is no threat: the canvas then is the first frame (as in
            // Chromium and Pillow), which must have pixels of its own.
            if screenWidth > 0 && screenHeight > 0 {
                try Self.check(limits, "logical screen", width: screenWidth, height: screenHeight)
            }
            let transparentIndex = try Self.walkToFirstImage(file, input)
            (frame, canvas) = try Self.readFirstImageDescriptor(file, input, limits: limits, transparentIndex: transparentIndex,
                                                                screenWidth: screenWidth, screenHeight: screenHeight)
        } catch {
            DGifCloseFile(file, nil)
            throw error
        }
        let map = file.pointee.Image.ColorMap ?? file.pointee.SColorMap
        self.palette = Self.palette(map, transparentIndex: frame.transparentIndex)
        self.file = file
        self.input = input
        self.frame = frame
        wideCodes = frame.wideCodeSize.map { GIFWideCodeDecoder(minimumCodeSize: $0, input: input) }
        storedWidth = canvas.width
        storedHeight = canvas.height
    }

    deinit { DGifCloseFile(file, nil) }

    /// The canvas at full resolution (GIF has no reduced decode; `maxShrink` is not needed).
    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        guard !frameRead else { throw .undecodable(reason: "GIF: the first frame was already read") }
        frameRead = true
        return try decodeFirstFrame(isCancelled: isCancelled)
    }

    /// Decodes one row of the first frame's colour indices (`frame.width` bytes) from giflib.
    func readRow(into indices: UnsafeMutablePointer<UInt8>) -> Bool {
        if let wideCodes { return wideCodes.readRow(into: indices, count: frame.width) }
        return DGifGetLine(file, indices, Int32(frame.width)) == GIF_OK
    }

    /// Why giflib's (or the wide-code decoder's) last call failed, with `context`.
    func failureReason(_ context: String) -> String {
        if let wideCodes, let failure = wideCodes.failure {
            return "GIF \(context): \(failure) (LZW minimum code size \(frame.wideCodeSize ?? 0))"
        }
        return GIFReason.describe(context, code: file.pointee.Error, input: input)
    }

    /// `limits.check` with the reason saying which size of the file broke which limit.
    static func check(_ limits: ImageLimits, _ what: String, width: Int, height: Int) throws(ImagingError) {
        do throws(ImagingError) {
            try limits.check(width: width, height: height)
        } catch {
            switch error {
            case .tooLarge(let reason): throw .tooLarge(reason: "GIF \(what): \(reason)")
            case .undecodable(let reason): throw .undecodable(reason: "GIF \(what): \(reason)")
            default: throw error
            }
        }
    }
}
