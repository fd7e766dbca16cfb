import CHeif

/// AVIF through libheif's aom encoder: 8-bit 4:2:0 (4:4:4 never pays for photo thumbnails at
/// these sizes), alpha as its own AV1 image, `colr` nclx saying sRGB (BT.709 primaries, sRGB
/// transfer, BT.601 matrix, full range), no metadata.
enum AVIFEncoder {
    static func encode(_ image: PixelBuffer, settings: EncoderSettings,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        try encode(image, thumbnail: nil, settings: settings, isCancelled: isCancelled)
    }

    /// `thumbnail` (for tests of the HEIF loader's thumbnail choice) is encoded too and attached
    /// to the primary image as its `thmb`.
    static func encode(_ image: PixelBuffer, thumbnail: PixelBuffer?, settings: EncoderSettings,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        HEIFLibrary.initialize()
        if isCancelled?() == true { throw .cancelled }
        guard let context = heif_context_alloc() else { throw .encodingFailed(reason: "libheif: cannot allocate a context") }
        defer { heif_context_free(context) }
        var encoderPointer: OpaquePointer?
        try encodingCheck(heif_context_get_encoder_for_format(context, heif_compression_AV1, &encoderPointer))
        guard let encoder = encoderPointer else { throw .encodingFailed(reason: "libheif has no AV1 encoder") }
        defer { heif_encoder_release(encoder) }
        try encodingCheck(heif_encoder_set_lossy_quality(encoder, Int32(clamping: min(100, max(1, settings.avifQuality)))))
        try encodingCheck(heif_encoder_set_parameter_integer(encoder, "speed", Int32(clamping: min(9, max(0, settings.avifSpeed)))))
        // One thread: a worker encodes on one core and the pool runs workers side by side
        // (libheif's aom default is 4 threads, each then competing with the other workers).
        try encodingCheck(heif_encoder_set_parameter_integer(encoder, "threads", 1))
        try encodingCheck(heif_encoder_set_parameter_string(encoder, "chroma", "420"))

        guard let nclx = heif_nclx_color_profile_alloc() else { throw .encodingFailed(reason: "libheif: cannot allocate nclx") }
        defer { heif_nclx_color_profile_free(nclx) }
        nclx.pointee.color_primaries = heif_color_primaries_ITU_R_BT_709_5
        nclx.pointee.transfer_characteristics = heif_transfer_characteristic_IEC_61966_2_1
        nclx.pointee.matrix_coefficients = heif_matrix_coefficients_ITU_R_BT_601_6
        nclx.pointee.full_range_flag = 1
        guard let options = heif_encoding_options_alloc() else { throw .encodingFailed(reason: "libheif: cannot allocate options") }
        defer { heif_encoding_options_free(options) }
        options.pointee.save_alpha_channel = 1
        // libheif leaves nclx out by default (a workaround for old macOS HEIC readers): AVIF
        // readers expect it, and without it some take the pixels as BT.709 limited range.
        options.pointee.macOS_compatibility_workaround_no_nclx_profile = 0
        options.pointee.output_nclx_profile = nclx

        let primary = try encodeImage(image, context: context, encoder: encoder, options: options, nclx: nclx)
        defer { heif_image_handle_release(primary) }
        if let thumbnail {
            let handle = try encodeImage(thumbnail, context: context, encoder: encoder, options: options, nclx: nclx)
            defer { heif_image_handle_release(handle) }
            // libheif 1.15's heif_context_assign_thumbnail passes its two images on swapped (the
            // primary became the thumbnail's thumbnail): so the thumbnail goes first here.
            try encodingCheck(heif_context_assign_thumbnail(context, handle, primary))
        }
        if isCancelled?() == true { throw .cancelled }
        return try write(context)
    }

    /// One image into `context`; a single aom encode, which cannot be interrupted (the caller
    /// checks for cancellation before and after).
    private static func encodeImage(_ pixels: PixelBuffer, context: OpaquePointer, encoder: OpaquePointer,
                                    options: UnsafeMutablePointer<heif_encoding_options>,
                                    nclx: UnsafeMutablePointer<heif_color_profile_nclx>) throws(ImagingError) -> OpaquePointer {
        var created: OpaquePointer?
        try encodingCheck(heif_image_create(Int32(pixels.width), Int32(pixels.height), heif_colorspace_RGB,
                                            pixels.hasAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &created))
        guard let image = created else { throw .encodingFailed(reason: "libheif: cannot create an image") }
        defer { heif_image_release(image) }
        try encodingCheck(heif_image_add_plane(image, heif_channel_interleaved, Int32(pixels.width), Int32(pixels.height), 8))
        var stride: Int32 = 0
        guard let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride) else {
            throw .encodingFailed(reason: "libheif: no plane to write")
        }
        pixels.bytes.withUnsafeBufferPointer { source in
            for y in 0..<pixels.height {
                (plane + y * Int(stride)).update(from: source.baseAddress! + y * pixels.rowBytes, count: pixels.rowBytes)
            }
        }
        try encodingCheck(heif_image_set_nclx_color_profile(image, nclx))
        var handle: OpaquePointer?
        try encodingCheck(heif_context_encode_image(context, image, encoder, options, &handle))
        guard let handle else { throw .encodingFailed(reason: "libheif: the encoder returned no image") }
        return handle
    }

    /// The file, written by libheif into memory.
    private static func write(_ context: OpaquePointer) throws(ImagingError) -> [UInt8] {
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        var writer = heif_writer(writer_api_version: 1) { _, data, size, userdata in
            let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
            if let data, size > 0 {
                sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
            }
            return heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: HEIFLibrary.successMessage)
        }
        try withExtendedLifetime(sink) { () throws(ImagingError) in
            try encodingCheck(heif_context_write(context, &writer, Unmanaged.passUnretained(sink).toOpaque()))
        }
        return sink.bytes
    }

    private static func encodingCheck(_ error: heif_error) throws(ImagingError) {
        if !error.isOK { throw .encodingFailed(reason: error.reasonLine) }
    }
}
