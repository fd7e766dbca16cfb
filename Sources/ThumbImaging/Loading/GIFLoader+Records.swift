import CGIF

extension GIFLoader {
    /// Most extension records read before the first image. Real files carry a handful (a
    /// NETSCAPE2.0 loop, a comment, XMP, a Graphic Control Extension); each costs no memory in
    /// giflib's record API, but a file of nothing else must end quickly and say why.
    static let maxRecordsBeforeImage = 4096
    /// Most extension sub-blocks (up to 255 bytes each) read before the first image: 16 MB of
    /// metadata, far past any real comment, XMP packet or ICC profile.
    static let maxSubBlocksBeforeImage = 1 << 16

    /// Reads the records before the first image (giflib then stands at its descriptor) and
    /// returns the transparent index of the last Graphic Control Extension among them: the one
    /// that applies to the image.
    static func walkToFirstImage(_ file: UnsafeMutablePointer<GifFileType>, _ input: GIFInput) throws(ImagingError) -> Int? {
        var records = 0, subBlocks = 0
        var transparentIndex: Int?
        while true {
            var type = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(file, &type) == GIF_OK else {
                throw .undecodable(reason: GIFReason.describe("record \(records + 1) (before any image)", code: file.pointee.Error, input: input))
            }
            switch type {
            case IMAGE_DESC_RECORD_TYPE:
                return transparentIndex
            case EXTENSION_RECORD_TYPE:
                records += 1
                guard records <= maxRecordsBeforeImage else {
                    throw .undecodable(reason: "GIF has more than \(maxRecordsBeforeImage) extension records before its first image")
                }
                var label: Int32 = 0
                var block: UnsafeMutablePointer<GifByteType>?
                guard DGifGetExtension(file, &label, &block) == GIF_OK else {
                    throw .undecodable(reason: GIFReason.describe("extension \(records)", code: file.pointee.Error, input: input))
                }
                // Graphic Control Extension: [size 4] packed, delay (2 bytes), transparent index.
                if label == GRAPHICS_EXT_FUNC_CODE, let block, block[0] >= 4 {
                    transparentIndex = block[1] & 0x01 != 0 ? Int(block[4]) : nil
                }
                while block != nil {
                    subBlocks += 1
                    guard subBlocks <= maxSubBlocksBeforeImage else {
                        throw .undecodable(reason: "GIF has more than \(maxSubBlocksBeforeImage) extension blocks before its first image")
                    }
                    guard DGifGetExtensionNext(file, &block) == GIF_OK else {
                        throw .undecodable(reason: GIFReason.describe("extension \(records)", code: file.pointee.Error, input: input))
                    }
                }
            case TERMINATE_RECORD_TYPE:
                throw .undecodable(reason: "GIF has no image: its trailer follows \(records) extension record(s)")
            default:
                throw .undecodable(reason: "GIF: record \(records + 1) has no known type")
            }
        }
    }

    /// Reads the first image's descriptor ahead of giflib (9 bytes at the cursor: left, top,
    /// width, height, flags), checks the frame and the canvas it makes with the logical screen
    /// against the limits, then lets giflib read the descriptor, the local colour map and the
    /// LZW code size.
    static func readFirstImageDescriptor(_ file: UnsafeMutablePointer<GifFileType>, _ input: GIFInput, limits: ImageLimits,
                                         transparentIndex: Int?, screenWidth: Int,
                                         screenHeight: Int) throws(ImagingError) -> (FirstFrame, (width: Int, height: Int)) {
        guard let left = input.peekWord(0), let top = input.peekWord(2), let width = input.peekWord(4),
              let height = input.peekWord(6), let flags = input.peek(8) else {
            throw .undecodable(reason: "GIF first frame's descriptor: the data ends at byte \(input.count)")
        }
        let place = "the first frame (\(width)x\(height) at \(left),\(top))"
        guard width > 0, height > 0 else { throw .undecodable(reason: "GIF: \(place) has no pixels") }
        try check(limits, "first frame", width: width, height: height)
        let canvasWidth = max(screenWidth, left + width), canvasHeight = max(screenHeight, top + height)
        try check(limits, "canvas of the \(screenWidth)x\(screenHeight) logical screen and \(place)",
                  width: canvasWidth, height: canvasHeight)
        // Straight-alpha RGBA at most; the pixel limit keeps this product far from overflow.
        let canvasBytes = canvasWidth * canvasHeight * 4
        if canvasBytes > limits.maxDecoderMemoryBytes {
            throw .tooLarge(reason: "GIF canvas \(canvasWidth)x\(canvasHeight) needs \(canvasBytes) bytes, over the \(limits.maxDecoderMemoryBytes)-byte decoder memory limit")
        }
        let localMapBytes = flags & 0x80 != 0 ? 3 << (Int(flags & 0x07) + 1) : 0
        let codeSize = input.peek(9 + localMapBytes)
        var wideCodeSize: Int?
        if DGifGetImageDesc(file) != GIF_OK {
            // giflib says "Failed to read" for an LZW code size over 8, having read the
            // descriptor, the colour map and the code size: 9–11 are decoded as Chromium does
            // (GIFWideCodeDecoder), anything larger is named.
            guard let codeSize, codeSize > 8, !input.ranShort else {
                throw .undecodable(reason: GIFReason.describe("first frame's descriptor", code: file.pointee.Error, input: input))
            }
            guard GIFWideCodeDecoder.supportedCodeSizes.contains(Int(codeSize)) else {
                throw .undecodable(reason: "GIF first frame: LZW minimum code size \(codeSize) is over 11 (browsers and GIF89a take at most 11 and 8)")
            }
            wideCodeSize = Int(codeSize)
        }
        let image = file.pointee.Image
        // giflib read the same 9 bytes.
        guard Int(image.Left) == left, Int(image.Top) == top, Int(image.Width) == width, Int(image.Height) == height else {
            throw .undecodable(reason: "GIF: giflib read another first frame than \(place)")
        }
        let frame = FirstFrame(left: left, top: top, width: width, height: height, interlaced: image.Interlace,
                               transparentIndex: transparentIndex, wideCodeSize: wideCodeSize)
        return (frame, (canvasWidth, canvasHeight))
    }
}
