/// What an asset's owner says the image is about: a point (`width` and `height` 0) or a region,
/// in fractions 0...1 of the displayed (upright) image, origin at the top left. Every value is
/// checked at construction, so a focus that exists is one the crop arithmetic handles.
package struct FocusRegion: Sendable, Hashable, CustomStringConvertible {
    package let x: Double
    package let y: Double
    package let width: Double
    package let height: Double

    /// nil unless every value is finite, the origin lies in 0...1 and the region inside the image.
    package init?(x: Double, y: Double, width: Double = 0, height: Double = 0) {
        let unit = 0.0...1.0
        guard unit.contains(x), unit.contains(y), unit.contains(width), unit.contains(height),
              x + width <= 1, y + height <= 1 else { return nil }
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    package var isPoint: Bool { width == 0 && height == 0 }
    /// The point the crop centres on, fractions of the displayed image.
    package var centreX: Double { x + width / 2 }
    package var centreY: Double { y + height / 2 }

    /// A stable text form for cache keys and the index: Swift's shortest round-tripping decimals.
    package var description: String { "\(x),\(y),\(width),\(height)" }
}
