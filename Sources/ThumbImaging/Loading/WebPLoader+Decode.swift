import CWebP

extension WebPLoader {
    /// Decodes `bitstream` into a `width`×`height` buffer (scaled by libwebp when that is not the
    /// frame's size) with `WebPIUpdate` over growing prefixes of the file (no copy of the input),
    /// a cancellation check between two slices.
    ///
    /// A file that ends early keeps what libwebp decoded: the rows it delivered, the rest grey
    /// (libjpeg's choice for a truncated JPEG), with a warning that counts them; a cut-off upload
    /// still shows what it has, and its thumbnail is replaced once the file is whole (the cache
    /// knows the file's identity). With no row delivered it is undecodable. Damaged data
    /// (a bitstream error) is undecodable: VP8 and VP8L have no resynchronisation point.
    func decode(width: Int, height: Int, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        let channels = hasAlpha ? 4 : 3
        let canvasRowBytes = width * channels
        // Only a frame that covers the canvas is scaled (`loadedSize`): then frame and canvas are one.
        let scaled = width != storedWidth || height != storedHeight
        guard !scaled || frameRect == FrameRect(x: 0, y: 0, width: storedWidth, height: storedHeight) else {
            throw .undecodable(reason: "an animation's first frame smaller than its canvas is not scaled")
        }
        // An animation's canvas is transparent around its first frame; zero is transparent black.
        var pixels = [UInt8](repeating: 0, count: width * height * channels)
        let config = UnsafeMutablePointer<WebPDecoderConfig>.allocate(capacity: 1)
        defer { config.deallocate() }
        guard WebPInitDecoderConfig(config) != 0 else { throw .undecodable(reason: "libwebp refused its own ABI version") }
        config.pointee.options.use_threads = 0
        if scaled {
            config.pointee.options.use_scaling = 1
            config.pointee.options.scaled_width = Int32(width)
            config.pointee.options.scaled_height = Int32(height)
        }
        config.pointee.output.colorspace = hasAlpha ? MODE_RGBA : MODE_RGB
        config.pointee.output.is_external_memory = 1

        let outcome = try pixels.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> (status: VP8StatusCode, rows: Int) in
            // The frame's rectangle of the canvas (all of it when scaled: only a frame that
            // covers the canvas is), at the canvas's stride.
            let frameWidth = scaled ? width : frameRect.width, frameHeight = scaled ? height : frameRect.height
            let offset = scaled ? 0 : frameRect.y * canvasRowBytes + frameRect.x * channels
            config.pointee.output.u.RGBA = WebPRGBABuffer(rgba: buffer.baseAddress! + offset, stride: Int32(canvasRowBytes),
                                                          size: buffer.count - offset)
            guard let decoder = WebPIDecode(nil, 0, config) else {
                throw .tooLarge(reason: OutOfMemory.reason("libwebp", "it could not start a decoder"))
            }
            defer { WebPIDelete(decoder) }
            let start = source.pointer + bitstream.lowerBound
            var fed = 0
            var status = VP8_STATUS_SUSPENDED
            while status == VP8_STATUS_SUSPENDED && fed < bitstream.count {
                if fed > 0, isCancelled?() == true { throw .cancelled }
                fed = min(bitstream.count, fed + Self.sliceBytes)
                status = WebPIUpdate(decoder, start, fed)
            }
            var lastRow: Int32 = 0
            if status != VP8_STATUS_OK, WebPIDecGetRGB(decoder, &lastRow, nil, nil, nil) == nil { lastRow = 0 }
            let rows = status == VP8_STATUS_OK ? frameHeight : min(frameHeight, max(0, Int(lastRow)))
            if status == VP8_STATUS_SUSPENDED, rows > 0 {
                // Grey below the last delivered row, within the frame's rectangle.
                for row in rows..<frameHeight {
                    let rowStart = offset + row * canvasRowBytes
                    for index in rowStart..<(rowStart + frameWidth * channels) {
                        buffer[index] = channels == 4 && index % 4 == 3 ? 255 : 128
                    }
                }
            }
            return (status, rows)
        }
        let frameHeight = scaled ? height : frameRect.height
        switch outcome.status {
        case VP8_STATUS_OK:
            return LoadedFrame(pixels: PixelBuffer(width: width, height: height, channels: channels, bytes: pixels),
                               iccProfile: nil, warning: nil)
        case VP8_STATUS_SUSPENDED where outcome.rows > 0:
            let warning = "the WebP data ends early (libwebp: \(WebPStatus.name(VP8_STATUS_SUSPENDED)) after all "
                + "\(bitstream.count) bytes): \(outcome.rows) of \(frameHeight) rows decoded, the rest is grey"
            return LoadedFrame(pixels: PixelBuffer(width: width, height: height, channels: channels, bytes: pixels),
                               iccProfile: nil, warning: warning)
        case VP8_STATUS_SUSPENDED:
            throw .undecodable(reason: "the WebP data ends before any row (libwebp: \(WebPStatus.name(VP8_STATUS_SUSPENDED)) "
                               + "after all \(bitstream.count) bytes)")
        case VP8_STATUS_OUT_OF_MEMORY:
            throw .tooLarge(reason: OutOfMemory.reason("libwebp", "after \(outcome.rows) of \(frameHeight) rows"))
        default:
            throw .undecodable(reason: "libwebp says \(WebPStatus.describe(outcome.status)) after \(outcome.rows) of "
                               + "\(frameHeight) rows")
        }
    }
}

/// libwebp's VP8StatusCode by name, for reasons.
enum WebPStatus {
    static func name(_ status: VP8StatusCode) -> String {
        let names = ["VP8_STATUS_OK", "VP8_STATUS_OUT_OF_MEMORY", "VP8_STATUS_INVALID_PARAM", "VP8_STATUS_BITSTREAM_ERROR",
                     "VP8_STATUS_UNSUPPORTED_FEATURE", "VP8_STATUS_SUSPENDED", "VP8_STATUS_USER_ABORT",
                     "VP8_STATUS_NOT_ENOUGH_DATA"]
        let index = Int(status.rawValue)
        return index < names.count ? names[index] : "VP8StatusCode \(status.rawValue)"
    }

    /// The name and what it means here.
    static func describe(_ status: VP8StatusCode) -> String {
        let meaning: String
        switch status {
        case VP8_STATUS_OUT_OF_MEMORY: meaning = "out of memory"
        case VP8_STATUS_INVALID_PARAM: meaning = "invalid parameter"
        case VP8_STATUS_BITSTREAM_ERROR: meaning = "the bitstream is damaged"
        case VP8_STATUS_UNSUPPORTED_FEATURE: meaning = "a feature libwebp does not support"
        case VP8_STATUS_NOT_ENOUGH_DATA: meaning = "the data ends inside the header"
        default: return name(status)
        }
        return "\(name(status)) (\(meaning))"
    }
}
