/// Placeholder until the WebP encoder lands.
enum WebPEncoder {
    static func encode(_ image: PixelBuffer, settings: EncoderSettings,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        throw .encodingFailed(reason: "WebP is not written yet")
    }
}
