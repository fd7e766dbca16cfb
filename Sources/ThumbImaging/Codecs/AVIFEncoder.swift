/// Placeholder until the AVIF encoder lands.
enum AVIFEncoder {
    static func encode(_ image: PixelBuffer, settings: EncoderSettings,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> [UInt8] {
        throw .encodingFailed(reason: "AVIF is not written yet")
    }
}
