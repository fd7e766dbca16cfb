/// An 8-bit interleaved image: RGB (3 channels) or RGBA (4 channels, straight alpha), sRGB-encoded.
/// Sizes are in pixels; rows are packed (`rowBytes == width * channels`).
package struct PixelBuffer: Sendable, Equatable {
    package let width: Int
    package let height: Int
    package let channels: Int
    package var bytes: [UInt8]

    package init(width: Int, height: Int, channels: Int, bytes: [UInt8]) {
        precondition(channels == 3 || channels == 4, "PixelBuffer holds RGB or RGBA")
        precondition(bytes.count == width * height * channels, "PixelBuffer size mismatch")
        self.width = width
        self.height = height
        self.channels = channels
        self.bytes = bytes
    }

    package init(width: Int, height: Int, channels: Int) {
        self.init(width: width, height: height, channels: channels,
                  bytes: [UInt8](repeating: 0, count: width * height * channels))
    }

    package var rowBytes: Int { width * channels }
    package var hasAlpha: Bool { channels == 4 }

    /// True when some pixel is not fully opaque.
    package var hasTransparency: Bool {
        guard channels == 4 else { return false }
        var index = 3
        while index < bytes.count {
            if bytes[index] != 255 { return true }
            index += 4
        }
        return false
    }

    /// The same pixels with an opaque alpha channel added.
    package func withAlpha() -> PixelBuffer {
        guard channels == 3 else { return self }
        var out = [UInt8](repeating: 255, count: width * height * 4)
        out.withUnsafeMutableBufferPointer { dst in
            bytes.withUnsafeBufferPointer { src in
                for index in 0..<(width * height) {
                    dst[index * 4] = src[index * 3]
                    dst[index * 4 + 1] = src[index * 3 + 1]
                    dst[index * 4 + 2] = src[index * 3 + 2]
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: 4, bytes: out)
    }

    /// The pixels composited over an opaque background colour, as RGB.
    package func flattened(over background: (red: UInt8, green: UInt8, blue: UInt8) = (255, 255, 255)) -> PixelBuffer {
        guard channels == 4 else { return self }
        var out = [UInt8](repeating: 0, count: width * height * 3)
        let backdrop = [UInt32(background.red), UInt32(background.green), UInt32(background.blue)]
        out.withUnsafeMutableBufferPointer { dst in
            bytes.withUnsafeBufferPointer { src in
                for index in 0..<(width * height) {
                    let alpha = UInt32(src[index * 4 + 3])
                    for channel in 0..<3 {
                        let value = UInt32(src[index * 4 + channel]) * alpha + backdrop[channel] * (255 - alpha)
                        dst[index * 3 + channel] = UInt8((value + 127) / 255)
                    }
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: 3, bytes: out)
    }
}

/// Premultiplied floating-point pixels (0...255 scale) between the shrink and resample steps.
/// Always four lanes a pixel (the fourth is alpha, or unused for RGB sources) so that every
/// step works a pixel at a time in one SIMD register.
struct FloatImage {
    let width: Int
    let height: Int
    /// Whether the fourth lane carries alpha (else it is ignored).
    let hasAlpha: Bool
    var pixels: [SIMD4<Float>]

    /// Zero-filled, or left uninitialised (`zeroed: false`) for a caller that writes every pixel.
    init(width: Int, height: Int, hasAlpha: Bool, zeroed: Bool = true) {
        self.width = width
        self.height = height
        self.hasAlpha = hasAlpha
        let count = width * height
        pixels = zeroed
            ? [SIMD4<Float>](repeating: .zero, count: count)
            : [SIMD4<Float>](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }
}
