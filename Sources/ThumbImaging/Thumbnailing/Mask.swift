import Foundation

/// Anti-aliased masks cut into the output's alpha: each edge pixel gets the fraction of it
/// that lies inside the shape (estimated from the distance of its centre to the edge).
enum Mask {
    static func apply(_ mask: SlotKind.Mask, pixelsPerPoint: Double, to image: inout PixelBuffer) {
        let width = Double(image.width), height = Double(image.height)
        let coverage: (Double, Double) -> Double
        switch mask {
        case .none:
            return
        case .circle:
            let rx = width / 2, ry = height / 2, r = min(rx, ry)
            coverage = { x, y in
                let dx = (x - rx) / rx, dy = (y - ry) / ry
                return 0.5 - (dx * dx + dy * dy).squareRoot() * r + r
            }
        case .cornerRadius(let points):
            let radius = min(points * pixelsPerPoint, width / 2, height / 2)
            guard radius > 0 else { return }
            coverage = { x, y in
                let cx = min(max(x, radius), width - radius)
                let cy = min(max(y, radius), height - radius)
                let dx = x - cx, dy = y - cy
                return radius - (dx * dx + dy * dy).squareRoot() + 0.5
            }
        }
        if image.channels == 3 { image = image.withAlpha() }
        let rowBytes = image.rowBytes
        image.bytes.withUnsafeMutableBufferPointer { bytes in
            for y in 0..<image.height {
                for x in 0..<image.width {
                    let inside = min(1, max(0, coverage(Double(x) + 0.5, Double(y) + 0.5)))
                    if inside >= 1 { continue }
                    let at = y * rowBytes + x * 4 + 3
                    let alpha = UInt8((Double(bytes[at]) * inside).rounded())
                    bytes[at] = alpha
                    // A colour under alpha 0 is never shown; zeros make a circle avatar's PNG
                    // about a sixth smaller and its deflate pass faster.
                    if alpha == 0 { bytes[at - 3] = 0; bytes[at - 2] = 0; bytes[at - 1] = 0 }
                }
            }
        }
    }
}
