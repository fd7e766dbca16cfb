import CHeif

/// A HEIF/AVIF file read by libheif (a `heif_context`), over bytes it keeps alive.
final class HEIFFile {
    let context: OpaquePointer
    /// The bytes libheif reads without a copy: the source, or a zero-padded copy of it (see init).
    private let bytes: SourceBytes
    /// Set when the file was read zero-padded: some item's data runs past the end of the file.
    let truncationWarning: String?

    /// Most zero bytes added after a file whose items run past its end.
    static let maxPaddingBytes = 16 << 20

    /// Parses the boxes (no pixel is decoded here). libheif 1.15 reads the data of every item
    /// when it opens a file, so one item cut short by a truncated download (the second frame of a
    /// sequence, say) makes the whole file unreadable: such a file is read again with up to its
    /// own length (at most `maxPaddingBytes`) of zeros after it, the decoder conceals what is
    /// missing, and the frame carries a warning. Newer libheif reads items lazily and opens these
    /// files as they are (pillow-heif does).
    init(_ source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        HEIFLibrary.initialize()
        var failure = ImagingError.undecodable(reason: "libheif: cannot read the file")
        var read: (OpaquePointer, SourceBytes)?
        var padded = false
        for attempt in 0..<2 {
            let bytes = attempt == 0 ? source : Self.padded(source)
            guard let context = heif_context_alloc() else {
                throw .undecodable(reason: "libheif: cannot allocate a context")
            }
            // Tiles of a grid image decoded one after another on this thread (libheif's default
            // is 4 threads of its own): a worker renders one image on one core; the pool runs
            // workers side by side.
            heif_context_set_max_decoding_threads(context, 0)
            // libheif's own check of a grid's output size and of every ispe (its default is
            // 32768 a side; thumbd's limits are checked again on the sizes below).
            heif_context_set_maximum_image_size_limit(context, Int32(clamping: limits.maxDimension))
            let error = heif_context_read_from_memory_without_copy(context, bytes.pointer, bytes.count, nil)
            if error.isOK {
                read = (context, bytes)
                padded = attempt == 1
                break
            }
            // The message lives in the context: read before it is freed.
            if attempt == 0 { failure = error.imagingError }
            heif_context_free(context)
            let canPad = attempt == 0 && error.subcode == heif_suberror_End_of_data && source.count > 0
            if !canPad { break }
        }
        guard let (context, bytes) = read else {
            if source.count == 0 { throw .undecodable(reason: "the file is empty") }
            throw failure
        }
        self.context = context
        self.bytes = bytes
        truncationWarning = padded ? "the file is truncated: an item's data runs past its end and was read as zeros" : nil
    }

    deinit { heif_context_free(context) }

    private static func padded(_ source: SourceBytes) -> SourceBytes {
        let count = source.count + min(source.count, maxPaddingBytes)
        // At least one byte: an empty allocation may have no base address.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        UnsafeMutableRawBufferPointer(rebasing: buffer[..<source.count]).copyMemory(from: UnsafeRawBufferPointer(start: source.pointer, count: source.count))
        return SourceBytes(adopting: buffer, count: count, fileStatus: nil)
    }

    /// The primary image (the one a viewer shows; the first frame of a sequence's still, too).
    func primaryImage() throws(ImagingError) -> HEIFImageHandle {
        var handle: OpaquePointer?
        try heif_context_get_primary_image_handle(context, &handle).check()
        guard let handle else { throw .undecodable(reason: "libheif: the file has no primary image") }
        return HEIFImageHandle(handle, file: self)
    }
}

/// One coded image of a file (the primary image or one of its thumbnails).
final class HEIFImageHandle {
    let handle: OpaquePointer
    /// Keeps the context (and so the bytes) alive as long as the handle.
    let file: HEIFFile

    init(_ handle: OpaquePointer, file: HEIFFile) {
        self.handle = handle
        self.file = file
    }

    deinit { heif_image_handle_release(handle) }

    /// The displayed size: after `clap`, `irot` and `imir`, which libheif applies when decoding.
    var width: Int { Int(heif_image_handle_get_width(handle)) }
    var height: Int { Int(heif_image_handle_get_height(handle)) }
    /// The coded size (`ispe`), before those transforms.
    var codedWidth: Int { Int(heif_image_handle_get_ispe_width(handle)) }
    var codedHeight: Int { Int(heif_image_handle_get_ispe_height(handle)) }
    var hasAlpha: Bool { heif_image_handle_has_alpha_channel(handle) != 0 }
    var isPremultiplied: Bool { heif_image_handle_is_premultiplied_alpha(handle) != 0 }
    /// Bits a luma sample, 8–16 (-1 when the file does not say).
    var lumaBits: Int { Int(heif_image_handle_get_luma_bits_per_pixel(handle)) }

    /// The thumbnails libheif lists for this image (`thmb` references), in file order.
    func thumbnails() -> [HEIFImageHandle] {
        let count = Int(heif_image_handle_get_number_of_thumbnails(handle))
        guard count > 0 else { return [] }
        var ids = [heif_item_id](repeating: 0, count: min(count, 64))
        let listed = Int(heif_image_handle_get_list_of_thumbnail_IDs(handle, &ids, Int32(ids.count)))
        return ids.prefix(max(0, listed)).compactMap { id in
            var thumbnail: OpaquePointer?
            guard heif_image_handle_get_thumbnail(handle, id, &thumbnail).isOK, let thumbnail else { return nil }
            return HEIFImageHandle(thumbnail, file: file)
        }
    }
}

/// A decoded `heif_image`, released with this object.
final class HEIFDecodedImage {
    let image: OpaquePointer

    init(_ image: OpaquePointer) { self.image = image }

    deinit { heif_image_release(image) }

    /// The decoded frame's size (its colour planes'), which a file's header may misstate.
    var size: (width: Int, height: Int) {
        let channel = heif_image_get_colorspace(image) == heif_colorspace_monochrome ? heif_channel_Y
            : heif_image_has_channel(image, heif_channel_R) != 0 ? heif_channel_R : heif_channel_interleaved
        return (Int(heif_image_get_width(image, channel)), Int(heif_image_get_height(image, channel)))
    }

    /// libheif's first decoding warning (data it concealed), one line; nil when clean.
    var firstWarning: String? {
        var warning = heif_error()
        guard heif_image_get_decoding_warnings(image, 0, &warning, 1) > 0 else { return nil }
        return warning.reasonLine
    }
}
