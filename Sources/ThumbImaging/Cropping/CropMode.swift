extension SlotKind {
    /// Where a `fill` crop sits in the source (a `fit` shows the whole image and has no crop).
    package enum CropMode: String, Sendable, CaseIterable {
        /// The crop is centred (the default, and what every kind did before crops could move).
        case centre
        /// The crop goes where the image's salient region is (detail, saturation, skin tones),
        /// scored only over what the kind's mask keeps.
        case attention
        /// The crop keeps the asset's focus as close to the slot's centre as the image allows;
        /// an asset without a focus is cropped as `attention`.
        case focus
    }
}

/// The part of the source a thumbnail shows, in pixels of the displayed (upright) source image:
/// the whole image for `fit`, the crop for `fill`.
package struct CropRectangle: Sendable, Equatable {
    package var x: Double
    package var y: Double
    package var width: Double
    package var height: Double

    package init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}
