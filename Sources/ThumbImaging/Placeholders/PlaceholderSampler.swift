/// Collects a source's placeholder during its one decode: a block shrink of the whole frame
/// (as the decoder hands it over, DCT-scaled or loader-reduced) down to at most
/// `ThumbHash.maxSidePixels` a side, then the frame's colour transform and orientation, so the
/// hash describes the displayed sRGB image without a second decode.
final class PlaceholderSampler {
    private(set) var shrinker: BoxShrinker?
    /// How the stored frame is shown (the source's own orientation, whatever a request asked).
    var orientation: Orientation = .up
    /// The frame's conversion to sRGB, when it carries a profile (nil: already sRGB).
    var colorTransform: ColorProfileTransform?
    /// Left unfed by a decode that would otherwise read only part of the frame (`PlaceholderDemand.ifWholeFrame`).
    let onlyIfWholeFrame: Bool

    init(onlyIfWholeFrame: Bool = false) {
        self.onlyIfWholeFrame = onlyIfWholeFrame
    }

    /// The block factor that brings a `width` × `height` frame to at most 100 px a side.
    static func blockFactor(width: Int, height: Int) -> Int {
        let longer = max(width, height)
        return max(1, (longer + ThumbHash.maxSidePixels - 1) / ThumbHash.maxSidePixels)
    }

    /// Pixels between the samples of a block, along each axis: at most 4 x 4 samples a block.
    /// The hash keeps only the lowest frequencies of a 100-px image, which a sparse mean renders
    /// as well as an exact one; reading every pixel of a 1000-px frame cost a twentieth of its render.
    static func sampleStep(factor: Int) -> Int {
        max(1, (factor + 3) / 4)
    }

    /// The shrinker the decoder feeds every row of the frame into.
    func start(width: Int, height: Int, channels: Int) -> BoxShrinker {
        let factor = Self.blockFactor(width: width, height: height)
        let shrinker = BoxShrinker(sourceWidth: width, sourceHeight: height, channels: channels, factor: factor,
                                   sampleStep: Self.sampleStep(factor: factor))
        self.shrinker = shrinker
        return shrinker
    }

    /// Feeds a whole loaded frame at once (the frame-at-once formats).
    func sample(_ pixels: PixelBuffer) {
        let shrinker = start(width: pixels.width, height: pixels.height, channels: pixels.channels)
        pixels.bytes.withUnsafeBufferPointer { buffer in
            shrinker.consume(rows: buffer.baseAddress!, count: pixels.height, rowStride: pixels.rowBytes)
        }
    }

    /// The placeholder of what was fed; nil when the frame was not (fully) fed, which leaves the
    /// asset without one rather than failing its thumbnails.
    func placeholder() -> Placeholder? {
        guard let shrinker, shrinker.isComplete else { return nil }
        var pixels = shrinker.output.pixelBuffer()
        colorTransform?.apply(to: &pixels)
        return Self.placeholder(of: orientation.apply(to: pixels))
    }

    /// ThumbHash and alpha-weighted mean colour of an sRGB image of at most 100 px a side.
    static func placeholder(of image: PixelBuffer) -> Placeholder? {
        let rgba = image.withAlpha()
        guard let hash = try? ThumbHash.encode(width: rgba.width, height: rgba.height, rgba: rgba.bytes) else { return nil }
        var red = 0, green = 0, blue = 0, alpha = 0
        rgba.bytes.withUnsafeBufferPointer { bytes in
            var at = 0
            while at < bytes.count {
                let a = Int(bytes[at + 3])
                red += Int(bytes[at]) * a
                green += Int(bytes[at + 1]) * a
                blue += Int(bytes[at + 2]) * a
                alpha += a
                at += 4
            }
        }
        let pixels = rgba.width * rgba.height
        // Sums stay below 100² × 255² (no overflow); a fully transparent image has no colour.
        func mean(_ sum: Int) -> UInt8 { alpha == 0 ? 0 : UInt8((sum + alpha / 2) / alpha) }
        return Placeholder(thumbHash: hash, averageRed: mean(red), averageGreen: mean(green), averageBlue: mean(blue),
                           averageAlpha: UInt8((alpha + pixels / 2) / pixels))
    }
}
