import CWebP

/// Writes WebP with libwebp: lossy (VP8, with a losslessly coded alpha plane when the pixels
/// have transparency) or lossless (VP8L), into memory (`WebPMemoryWriter`), cancellable through
/// the picture's progress hook. No metadata: thumbnails are sRGB.
enum WebPEncoder {
    /// How libwebp is driven, apart from what `EncoderSettings` says. Measured on the 9 photos of
    /// large-photos, per thumbnail (in-process, median of 5, this 2-core Xeon; bytes at q80):
    /// - lossy `method` 4: contact-avatar@3x 4550 B in 4.1 ms (m2: 5143 B, 2.4 ms; m5: 4440 B,
    ///   4.9 ms; m6: 4277 B, 141 ms), x-large 25998 B in 23.5 ms (m2: 26775 B, 10.9 ms; m5:
    ///   25440 B, 28.2 ms). m4 is where size stops falling fast; m3 is as large at small sizes.
    /// - sharp RGB→YUV (`use_sharp_yuv`) is not used: +5% bytes and +25–50% time for +0.003 SSIM,
    ///   less than one quality step buys.
    /// - lossless preset level 3: masked photo avatars within 0.5% of level 6's bytes at half the
    ///   time (contact-avatar@3x 24999 B in 16 ms against 24891 B in 33 ms); level 9 is 2% smaller
    ///   in 2.6 s.
    struct Tuning {
        /// Lossy speed/size trade-off, 0 (fastest) to 6.
        var lossyMethod: Int32 = 4
        /// `WebPConfigLosslessPreset` level, 0 (fastest) to 9.
        var losslessLevel: Int32 = 3
    }

    static let tuning = Tuning()

    /// Most distinct colours of an image `auto` also tries lossless for: VP8L's colour-indexing
    /// transform (a palette) applies up to 256, which is what makes it win.
    static let paletteColours = 256

    /// `auto`: lossy for an opaque image; for one with transparency (the masked kinds, or a
    /// transparent source) lossy too, unless it has at most 256 colours: then both, the smaller
    /// kept. Measured for contact-avatar@2x/@3x and product-row@3x (cornerRadius 8): on the 9
    /// photos lossless was never smaller (0 of 27; 5–9x lossy q80's bytes: 24999 against 4550 B
    /// a @3x avatar on average); on corpus graphics with at most 256 colours after the resize it
    /// was smaller in 5 of 7 (broken_iccp.png's avatar@3x 2020 B against 2182 B, and exact), at
    /// ~1 ms more; on one of 1200–2600 colours (a drawn gopher) it was twice lossy's size. A photo
    /// gives up the count within its first few hundred pixels.
    static func encode(_ image: PixelBuffer, settings: EncoderSettings, isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        let quality = settings.webpQuality
        switch settings.webpMode {
        case .lossy:
            return try encode(image, lossless: false, quality: quality, tuning: tuning, isCancelled: isCancelled)
        case .lossless:
            return try encode(image, lossless: true, quality: quality, tuning: tuning, isCancelled: isCancelled)
        case .auto:
            let lossy = try encode(image, lossless: false, quality: quality, tuning: tuning, isCancelled: isCancelled)
            guard image.hasTransparency, hasPaletteSize(image) else { return lossy }
            let lossless = try encode(image, lossless: true, quality: quality, tuning: tuning, isCancelled: isCancelled)
            return lossless.count < lossy.count ? lossless : lossy
        }
    }

    /// Whether `image` has at most `paletteColours` distinct pixel values.
    static func hasPaletteSize(_ image: PixelBuffer) -> Bool {
        var colours = Set<UInt32>(minimumCapacity: 2 * paletteColours)
        return image.bytes.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset < bytes.count {
                var value = UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
                if image.channels == 4 { value |= UInt32(bytes[offset + 3]) << 24 }
                if colours.insert(value).inserted, colours.count > paletteColours { return false }
                offset += image.channels
            }
            return true
        }
    }

    /// One libwebp encode. `quality` is the lossy quality (1–100); lossless uses `tuning.losslessLevel`.
    static func encode(_ image: PixelBuffer, lossless: Bool, quality: Int, tuning: Tuning,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        guard image.width > 0, image.height > 0, image.width <= Int(WEBP_MAX_DIMENSION), image.height <= Int(WEBP_MAX_DIMENSION)
        else { throw .encodingFailed(reason: "WebP cannot hold \(image.width)x\(image.height) pixels") }
        var config = try configuration(lossless: lossless, quality: quality, tuning: tuning)

        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw .encodingFailed(reason: "libwebp refused its own ABI version") }
        defer { WebPPictureFree(&picture) }
        picture.width = Int32(image.width)
        picture.height = Int32(image.height)
        // ARGB for lossless (its native form); lossy imports straight to YUV 4:2:0.
        picture.use_argb = lossless ? 1 : 0
        let imported = image.bytes.withUnsafeBufferPointer { pixels in
            image.channels == 4
                ? WebPPictureImportRGBA(&picture, pixels.baseAddress, Int32(image.rowBytes))
                : WebPPictureImportRGB(&picture, pixels.baseAddress, Int32(image.rowBytes))
        }
        guard imported != 0 else { throw .encodingFailed(reason: "libwebp could not import the pixels (\(name(picture.error_code)))") }

        let writer = UnsafeMutablePointer<WebPMemoryWriter>.allocate(capacity: 1)
        WebPMemoryWriterInit(writer)
        defer {
            WebPMemoryWriterClear(writer)
            writer.deallocate()
        }
        picture.writer = WebPMemoryWrite
        picture.custom_ptr = UnsafeMutableRawPointer(writer)
        let cancellation = isCancelled.map(CancellationContext.init)
        if let cancellation {
            picture.user_data = cancellation.pointer
            // Returning 0 makes libwebp stop with VP8_ENC_ERROR_USER_ABORT.
            picture.progress_hook = { _, picture in
                guard let context = picture?.pointee.user_data else { return 1 }
                return Unmanaged<CancellationContext>.fromOpaque(context).takeUnretainedValue().isCancelled() ? 0 : 1
            }
        }
        let encoded = withExtendedLifetime(cancellation) { WebPEncode(&config, &picture) }
        guard encoded != 0 else {
            if picture.error_code == VP8_ENC_ERROR_USER_ABORT { throw .cancelled }
            throw .encodingFailed(reason: "libwebp says \(name(picture.error_code))")
        }
        guard let memory = writer.pointee.mem, writer.pointee.size > 0 else {
            throw .encodingFailed(reason: "libwebp wrote nothing")
        }
        return Array(UnsafeBufferPointer(start: memory, count: writer.pointee.size))
    }

    /// libwebp's settings for one encode (a still, or every frame of an animation).
    static func configuration(lossless: Bool, quality: Int, tuning: Tuning) throws(ImagingError) -> WebPConfig {
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw .encodingFailed(reason: "libwebp refused its own ABI version") }
        if lossless {
            _ = WebPConfigLosslessPreset(&config, tuning.losslessLevel)
        } else {
            config.quality = Float(min(100, max(1, quality)))
            config.method = tuning.lossyMethod
        }
        config.thread_level = 0
        guard WebPValidateConfig(&config) != 0 else { throw .encodingFailed(reason: "libwebp refused the configuration") }
        return config
    }

    static func name(_ error: WebPEncodingError) -> String {
        let names = ["VP8_ENC_OK", "VP8_ENC_ERROR_OUT_OF_MEMORY", "VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY",
                     "VP8_ENC_ERROR_NULL_PARAMETER", "VP8_ENC_ERROR_INVALID_CONFIGURATION", "VP8_ENC_ERROR_BAD_DIMENSION",
                     "VP8_ENC_ERROR_PARTITION0_OVERFLOW", "VP8_ENC_ERROR_PARTITION_OVERFLOW", "VP8_ENC_ERROR_BAD_WRITE",
                     "VP8_ENC_ERROR_FILE_TOO_BIG", "VP8_ENC_ERROR_USER_ABORT"]
        let index = Int(error.rawValue)
        return index < names.count ? names[index] : "WebPEncodingError \(error.rawValue)"
    }
}
