/// EXIF orientation (TIFF tag 0x0112): how stored pixels must be turned to be shown upright.
package enum Orientation: Int, Sendable, CaseIterable {
    case up = 1, upMirrored, down, downMirrored, leftMirrored, right, rightMirrored, left

    /// Orientations 5–8 swap width and height between the stored and the displayed image.
    package var swapsDimensions: Bool { rawValue >= 5 }

    /// The displayed size of a stored image of `width` × `height` pixels.
    package func displayedSize(width: Int, height: Int) -> (width: Int, height: Int) {
        swapsDimensions ? (height, width) : (width, height)
    }

    /// Turns stored pixels upright: the result is what a viewer that honours EXIF shows.
    package func apply(to image: PixelBuffer) -> PixelBuffer {
        if self == .up { return image }
        let (storedWidth, storedHeight) = (image.width, image.height)
        let (width, height) = displayedSize(width: storedWidth, height: storedHeight)
        let channels = image.channels
        var out = [UInt8](repeating: 0, count: image.bytes.count)
        out.withUnsafeMutableBufferPointer { dst in
            image.bytes.withUnsafeBufferPointer { src in
                for y in 0..<height {
                    for x in 0..<width {
                        let (sx, sy) = storedCoordinate(x: x, y: y, storedWidth: storedWidth, storedHeight: storedHeight)
                        let from = (sy * storedWidth + sx) * channels
                        let to = (y * width + x) * channels
                        for channel in 0..<channels { dst[to + channel] = src[from + channel] }
                    }
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: channels, bytes: out)
    }

    /// The stored pixel shown at displayed (x, y).
    func storedCoordinate(x: Int, y: Int, storedWidth w: Int, storedHeight h: Int) -> (Int, Int) {
        switch self {
        case .up: (x, y)
        case .upMirrored: (w - 1 - x, y)
        case .down: (w - 1 - x, h - 1 - y)
        case .downMirrored: (x, h - 1 - y)
        case .leftMirrored: (y, x)
        case .right: (y, h - 1 - x)
        case .rightMirrored: (w - 1 - y, h - 1 - x)
        case .left: (w - 1 - y, x)
        }
    }
}
