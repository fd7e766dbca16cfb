import CGIF

/// Every frame of an animated GIF, composited as browsers do, through giflib's record API (one
/// frame's rows at a time, never `DGifSlurp`). The frames' places, delays, disposals and
/// transparent indices come from the `GIFAnimationScan` that counted them; giflib must read the
/// same descriptors, or the file is refused.
///
/// The canvas is the logical screen grown to hold the first frame (as `GIFLoader`'s); later
/// frames are clipped to it. It starts transparent, and disposal 2 clears a frame's rectangle
/// to transparent rather than to the background colour, as Chromium and Firefox do.
final class GIFAnimation: AnimationFrames {
    let canvasWidth: Int
    let canvasHeight: Int
    var frameCount: Int { scan.frames.count }
    var loopCount: Int { scan.loopCount ?? 1 }
    private(set) var warning: String?

    private let scan: GIFAnimationScan
    private let limits: ImageLimits
    private let file: UnsafeMutablePointer<GifFileType>
    private let input: GIFInput // giflib reads through it: kept alive with the handle
    private var canvas: [UInt8]
    /// The canvas before the last frame, when that frame's disposal restores it (3).
    private var restore: [UInt8]?
    private var nextIndex = 0
    private var finished = false

    init(source: SourceBytes, scan: GIFAnimationScan, limits: ImageLimits) throws(ImagingError) {
        let first = scan.frames[0]
        let width = max(scan.screenWidth, first.left + first.width), height = max(scan.screenHeight, first.top + first.height)
        try GIFLoader.check(limits, "animation canvas", width: width, height: height)
        let bytes = width * height * 4 // within maxPixels: no overflow
        if bytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "GIF canvas \(width)x\(height) needs \(bytes) bytes, over the \(limits.maxDecoderMemoryBytes)-byte decoder memory limit")
        }
        let input = GIFInput(source)
        var code: Int32 = D_GIF_SUCCEEDED
        guard let file = DGifOpen(input.pointer, GIFInput.read, &code) else {
            throw .undecodable(reason: GIFReason.describe("header", code: code, input: input))
        }
        (canvasWidth, canvasHeight, self.scan, self.limits, self.file, self.input) = (width, height, scan, limits, file, input)
        canvas = [UInt8](repeating: 0, count: bytes)
    }

    deinit { DGifCloseFile(file, nil) }

    func next(isCancelled: CancellationCheck?) throws(ImagingError) -> (pixels: PixelBuffer, durationMilliseconds: Int)? {
        guard !finished, nextIndex < scan.frames.count else { return nil }
        let index = nextIndex
        nextIndex += 1
        do throws(ImagingError) {
            try walkToImage(index)
            try drawFrame(index, isCancelled: isCancelled)
        } catch {
            guard index > 0, case .undecodable(let reason) = error else { throw error }
            // Browsers show the frames before a broken one.
            finished = true
            warning = "animation stopped after frame \(index) of \(scan.frames.count): \(reason)"
            return nil
        }
        // Delays are hundredths of a second (16 bits: no overflow).
        let milliseconds = AnimationTiming.playedMilliseconds(scan.frames[index].delayCentiseconds * 10)
        return (PixelBuffer(width: canvasWidth, height: canvasHeight, channels: 4, bytes: canvas), milliseconds)
    }

    /// Reads records up to frame `index`'s descriptor and has giflib read it.
    private func walkToImage(_ index: Int) throws(ImagingError) {
        let context = "frame \(index + 1)"
        while true {
            var type = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(file, &type) == GIF_OK else {
                throw .undecodable(reason: GIFReason.describe("record before \(context)", code: file.pointee.Error, input: input))
            }
            switch type {
            case IMAGE_DESC_RECORD_TYPE:
                guard DGifGetImageDesc(file) == GIF_OK else {
                    throw .undecodable(reason: GIFReason.describe("\(context)'s descriptor", code: file.pointee.Error, input: input))
                }
                let image = file.pointee.Image, expected = scan.frames[index]
                guard Int(image.Left) == expected.left, Int(image.Top) == expected.top, Int(image.Width) == expected.width,
                      Int(image.Height) == expected.height else {
                    throw .undecodable(reason: "GIF: giflib read another \(context) than the block structure holds")
                }
                return
            case EXTENSION_RECORD_TYPE:
                // Already read by the scan; the sub-blocks are bounded by the file.
                var label: Int32 = 0
                var block: UnsafeMutablePointer<GifByteType>?
                guard DGifGetExtension(file, &label, &block) == GIF_OK else {
                    throw .undecodable(reason: GIFReason.describe("extension before \(context)", code: file.pointee.Error, input: input))
                }
                while block != nil {
                    guard DGifGetExtensionNext(file, &block) == GIF_OK else {
                        throw .undecodable(reason: GIFReason.describe("extension before \(context)", code: file.pointee.Error, input: input))
                    }
                }
            default:
                throw .undecodable(reason: "GIF: the data ends before \(context)")
            }
        }
    }

    /// Disposes of the previous frame, then draws frame `index`'s opaque pixels over the canvas.
    private func drawFrame(_ index: Int, isCancelled: CancellationCheck?) throws(ImagingError) {
        let frame = scan.frames[index]
        try GIFLoader.check(limits, "frame \(index + 1)", width: frame.width, height: frame.height)
        if index > 0 {
            let previous = scan.frames[index - 1]
            switch previous.disposal {
            case 2: clear(previous)
            case 3: if let restore { canvas = restore }
            default: break
            }
        }
        restore = frame.disposal == 3 ? canvas : nil
        let map = file.pointee.Image.ColorMap ?? file.pointee.SColorMap
        let palette = GIFLoader.palette(map, transparentIndex: frame.transparentIndex)
        var indices = [UInt8](repeating: 0, count: frame.width)
        for fileRow in 0..<frame.height {
            if fileRow % GIFLoader.rowsPerCancellationCheck == 0, isCancelled?() == true { throw .cancelled }
            let read = indices.withUnsafeMutableBufferPointer { DGifGetLine(file, $0.baseAddress!, Int32(frame.width)) }
            guard read == GIF_OK else {
                throw .undecodable(reason: GIFReason.describe("frame \(index + 1), row \(fileRow + 1)", code: file.pointee.Error, input: input))
            }
            let y = frame.top + (file.pointee.Image.Interlace ? GIFLoader.interlacedRow(fileRow, height: frame.height) : fileRow)
            guard y < canvasHeight else { continue }
            drawRow(indices, y: y, left: frame.left, palette: palette)
        }
    }

    private func drawRow(_ indices: [UInt8], y: Int, left: Int, palette: [UInt8]) {
        let count = max(0, min(indices.count, canvasWidth - left))
        guard count > 0 else { return }
        canvas.withUnsafeMutableBufferPointer { canvas in
            var out = canvas.baseAddress! + (y * canvasWidth + left) * 4
            for index in indices.prefix(count) {
                let entry = Int(index) * 4
                // The transparent index (alpha 0) leaves the canvas as it was.
                if palette[entry + 3] != 0 {
                    (out[0], out[1], out[2], out[3]) = (palette[entry], palette[entry + 1], palette[entry + 2], 255)
                }
                out += 4
            }
        }
    }

    /// Frame `frame`'s rectangle, within the canvas, made transparent.
    private func clear(_ frame: GIFAnimationScan.Frame) {
        let right = min(canvasWidth, frame.left + frame.width), bottom = min(canvasHeight, frame.top + frame.height)
        guard frame.left < right, frame.top < bottom else { return }
        for y in frame.top..<bottom {
            let start = (y * canvasWidth + frame.left) * 4
            canvas.replaceSubrange(start..<(start + (right - frame.left) * 4), with: repeatElement(0, count: (right - frame.left) * 4))
        }
    }
}
