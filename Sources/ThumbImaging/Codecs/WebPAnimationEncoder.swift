import CWebP

/// Writes an animated WebP with libwebp's `WebPAnimEncoder`: frames are added one at a time
/// (each converted to a sub-rectangle against the previous, with libwebp's default key-frame
/// spacing, kmin 9 / kmax 17 for lossy), with the frame's start time in milliseconds. Lossy at
/// the kind's WebP quality, unless its mode is lossless (`auto` is not tried both ways per frame:
/// that doubles the cost of every frame for the rare palette animation). libwebp merges a frame
/// identical to the one before into it (its duration added), so the frame count can fall.
final class WebPAnimationEncoder {
    private let encoder: OpaquePointer
    private var config: WebPConfig
    private let width: Int
    private let height: Int
    /// Start of the next frame, milliseconds.
    private(set) var elapsedMilliseconds = 0
    private(set) var frames = 0

    init(width: Int, height: Int, loopCount: Int, settings: EncoderSettings) throws(ImagingError) {
        guard width > 0, height > 0, width <= Int(WEBP_MAX_DIMENSION), height <= Int(WEBP_MAX_DIMENSION) else {
            throw .encodingFailed(reason: "WebP cannot hold \(width)x\(height) pixels")
        }
        var options = WebPAnimEncoderOptions()
        guard WebPAnimEncoderOptionsInit(&options) != 0 else { throw .encodingFailed(reason: "libwebp's muxer refused its own ABI version") }
        // WebP's loop count is 16 bits, as GIF's.
        options.anim_params.loop_count = Int32(min(max(loopCount, 0), 0xFFFF))
        options.anim_params.bgcolor = 0 // transparent, as browsers clear the canvas anyway
        guard let encoder = WebPAnimEncoderNew(Int32(width), Int32(height), &options) else {
            throw .encodingFailed(reason: "libwebp could not start an animation of \(width)x\(height)")
        }
        self.encoder = encoder
        (self.width, self.height) = (width, height)
        do throws(ImagingError) {
            config = try WebPEncoder.configuration(lossless: settings.webpMode == .lossless, quality: settings.webpQuality,
                                                   tuning: WebPEncoder.tuning)
        } catch {
            WebPAnimEncoderDelete(encoder)
            throw error
        }
    }

    deinit { WebPAnimEncoderDelete(encoder) }

    /// Adds a frame of the animation's size that shows for `durationMilliseconds`.
    func add(_ image: PixelBuffer, durationMilliseconds: Int) throws(ImagingError) {
        guard image.width == width, image.height == height else {
            throw .encodingFailed(reason: "animation frame \(frames + 1) is \(image.width)x\(image.height), not \(width)x\(height)")
        }
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw .encodingFailed(reason: "libwebp refused its own ABI version") }
        defer { WebPPictureFree(&picture) }
        picture.width = Int32(width)
        picture.height = Int32(height)
        picture.use_argb = 1 // the animation encoder compares frames in ARGB
        let imported = image.bytes.withUnsafeBufferPointer { pixels in
            image.channels == 4
                ? WebPPictureImportRGBA(&picture, pixels.baseAddress, Int32(image.rowBytes))
                : WebPPictureImportRGB(&picture, pixels.baseAddress, Int32(image.rowBytes))
        }
        guard imported != 0 else { throw .encodingFailed(reason: "libwebp could not import frame \(frames + 1)") }
        // Each duration is at most 16 bits × 10 ms (GIF) or 24 bits (WebP), frames at most
        // `maxAnimationFrames`: the sum stays far inside Int32 for any sane limit; it is clamped.
        guard WebPAnimEncoderAdd(encoder, &picture, Int32(clamping: elapsedMilliseconds), &config) != 0 else {
            throw .encodingFailed(reason: "libwebp could not encode animation frame \(frames + 1): \(message)")
        }
        elapsedMilliseconds += durationMilliseconds
        frames += 1
    }

    /// The file, once every frame was added.
    func finish() throws(ImagingError) -> [UInt8] {
        guard WebPAnimEncoderAdd(encoder, nil, Int32(clamping: elapsedMilliseconds), nil) != 0 else {
            throw .encodingFailed(reason: "libwebp could not end the animation: \(message)")
        }
        var data = WebPData()
        guard WebPAnimEncoderAssemble(encoder, &data) != 0, let bytes = data.bytes, data.size > 0 else {
            throw .encodingFailed(reason: "libwebp could not assemble the animation: \(message)")
        }
        defer { WebPFree(UnsafeMutableRawPointer(mutating: bytes)) }
        return Array(UnsafeBufferPointer(start: bytes, count: data.size))
    }

    private var message: String {
        WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "no reason given"
    }
}
