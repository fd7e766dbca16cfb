/// How much of each point of an output a kind's mask keeps, so attention scores only what
/// will be seen. Circles and rounded rectangles are symmetric under every flip and the
/// transposition, so the stored frame's output size is all it needs.
struct MaskCoverage {
    var mask: SlotKind.Mask
    /// The output's size in the frame the crop is placed in, pixels.
    var widthPixels: Double
    var heightPixels: Double
    /// Output pixels per point (the mask's radius shrinks with an output smaller than its slot).
    var pixelsPerPoint: Double

    /// Fraction 0...1 kept at (`u`, `v`), fractions of the output's width and height.
    func weight(u: Double, v: Double) -> Float {
        let x = u * widthPixels, y = v * heightPixels
        let inside: Double
        switch mask {
        case .none:
            return 1
        case .circle:
            let rx = widthPixels / 2, ry = heightPixels / 2, r = min(rx, ry)
            guard rx > 0, ry > 0 else { return 0 }
            let dx = (x - rx) / rx, dy = (y - ry) / ry
            inside = 0.5 - (dx * dx + dy * dy).squareRoot() * r + r
        case .cornerRadius(let points):
            let radius = min(points * pixelsPerPoint, widthPixels / 2, heightPixels / 2)
            guard radius > 0 else { return 1 }
            let cx = min(max(x, radius), widthPixels - radius)
            let cy = min(max(y, radius), heightPixels - radius)
            let dx = x - cx, dy = y - cy
            inside = radius - (dx * dx + dy * dy).squareRoot() + 0.5
        }
        return Float(min(1, max(0, inside)))
    }
}
