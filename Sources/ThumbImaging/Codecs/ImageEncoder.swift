import CThumbShim

/// Writes pixels as JPEG, PNG, WebP or AVIF, sRGB with no metadata.
package enum ImageEncoder {
    /// The format `settings` asks for, given whether the pixels carry transparency.
    package static func format(for settings: EncoderSettings, hasAlpha: Bool) -> ImageFormat {
        switch settings.format {
        case .auto: hasAlpha ? .png : .jpeg
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        }
    }

    /// Encodes `image`; JPEG output flattens any alpha over white. `isCancelled` is asked every
    /// few KB of rows (zlib makes a PNG the slowest step of a small thumbnail).
    package static func encode(_ image: PixelBuffer, as format: ImageFormat, settings: EncoderSettings,
                              isCancelled: CancellationCheck? = nil) throws(ImagingError) -> [UInt8] {
        var message = [CChar](repeating: 0, count: Int(CTHUMB_MESSAGE_CAPACITY))
        let cancellation = isCancelled.map(CancellationContext.init)
        defer { withExtendedLifetime(cancellation) {} }
        let check = cancellation.map { _ in CancellationContext.ask }
        switch format {
        case .jpeg:
            let opaque = image.flattened()
            var output: UnsafeMutablePointer<UInt8>?
            var length: UInt = 0
            let status = opaque.bytes.withUnsafeBufferPointer { pixels in
                CThumb_JPEGEncode(pixels.baseAddress, UInt32(opaque.width), UInt32(opaque.height), opaque.rowBytes, 3,
                                  Int32(settings.jpegQuality), settings.jpegProgressive ? 1 : 0, 1, check, cancellation?.pointer,
                                  &output, &length, &message)
            }
            return try collect(status: status, output: output, length: Int(length), message: message)
        case .png:
            var output: UnsafeMutablePointer<UInt8>?
            var length = 0
            let status = image.bytes.withUnsafeBufferPointer { pixels in
                CThumb_PNGEncode(pixels.baseAddress, UInt32(image.width), UInt32(image.height), image.rowBytes,
                                 Int32(image.channels), Int32(settings.pngCompressionLevel), check, cancellation?.pointer,
                                 &output, &length, &message)
            }
            return try collect(status: status, output: output, length: length, message: message)
        case .webp:
            return try WebPEncoder.encode(image, settings: settings, isCancelled: isCancelled)
        case .avif:
            return try AVIFEncoder.encode(image, settings: settings, isCancelled: isCancelled)
        }
    }

    private static func collect(status: Int32, output: UnsafeMutablePointer<UInt8>?, length: Int,
                                message: [CChar]) throws(ImagingError) -> [UInt8] {
        if status == CTHUMB_CANCELLED { throw .cancelled }
        guard status == 0, let output else {
            throw .encodingFailed(reason: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        defer { CThumb_Free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }
}
