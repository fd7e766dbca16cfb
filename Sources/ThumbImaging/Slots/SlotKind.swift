/// A cell slot's thumbnail spec, registered by name like a cell's reuse identifier.
/// Sizes are in points; a scale turns them into pixels (pixels = points × scale).
package struct SlotKind: Sendable, Equatable {
    package enum ContentMode: String, Sendable {
        /// Cover the slot and centre-crop the overflow (UIKit's scaleAspectFill).
        case fill
        /// Fit inside the slot; the output is the fitted size.
        case fit
    }

    package enum Mask: Sendable, Equatable {
        case none
        /// An anti-aliased circle (an ellipse for a non-square output).
        case circle
        /// Rounded corners, radius in points.
        case cornerRadius(points: Double)
    }

    /// What an animated source (GIF, WebP) gives.
    package enum Animation: String, Sendable, CaseIterable {
        /// Its first frame, as a still (the default: a cell that shows one picture).
        case still
        /// An animated WebP of every frame when the output is WebP (else the first frame, as a
        /// still in the negotiated format); a source of one frame still gives a still.
        case keep
    }

    package var name: String
    /// Slot width, points.
    package var widthPoints: Double
    /// Slot height, points.
    package var heightPoints: Double
    /// Display scales (1 to 4, see `DisplayScale`) the kind is rendered at.
    package var scales: [Int]
    package var mode: ContentMode
    package var mask: Mask
    /// Whether a source smaller than the slot is enlarged; without it the output is never
    /// larger than the source (a fill keeps the slot's aspect ratio, at the source's size).
    package var upscale: Bool
    /// Pre-rendered when an asset appears (used by the daemon's folder watcher).
    package var pregenerate: Bool
    /// Where a `fill` crop sits (ignored by `fit`).
    package var crop: CropMode
    package var animation: Animation

    package init(name: String, widthPoints: Double, heightPoints: Double, scales: [Int] = [1],
                mode: ContentMode = .fit, mask: Mask = .none, upscale: Bool = false, pregenerate: Bool = false,
                crop: CropMode = .centre, animation: Animation = .still) {
        self.name = name
        self.widthPoints = widthPoints
        self.heightPoints = heightPoints
        self.scales = scales
        self.mode = mode
        self.mask = mask
        self.upscale = upscale
        self.pregenerate = pregenerate
        self.crop = crop
        self.animation = animation
    }

    /// The slot's size in pixels at `scale`, or nil when it breaks `SlotBounds` (a side not
    /// finite, or over `SlotBounds.maxPixelsPerSide`). Every door checks this before a kind is used.
    package func checkedPixelSize(scale: Int) -> PixelSize? {
        PixelSize(widthPoints: widthPoints, heightPoints: heightPoints, scale: scale)
    }

    /// The slot's size in pixels at `scale`. Kinds are checked at the door (`SlotSpec.validate`),
    /// where this is exact; for a kind built in code that skipped it, each side is clamped to
    /// 1 ... `SlotBounds.maxPixelsPerSide` rather than trap.
    package func pixelSize(scale: Int) -> (width: Int, height: Int) {
        if let size = checkedPixelSize(scale: scale) { return (size.width, size.height) }
        let sides = 1...SlotBounds.maxPixelsPerSide
        return (CheckedConversion.clampedInteger(widthPoints * Double(scale), to: sides),
                CheckedConversion.clampedInteger(heightPoints * Double(scale), to: sides))
    }
}

/// A grid layout from which a kind's item width follows (UICollectionViewFlowLayout-style).
/// All lengths in points.
package struct GridLayout: Sendable, Equatable {
    package var columns: Int
    package var containerWidth: Double
    package var leadingInset: Double
    package var trailingInset: Double
    package var interItemSpacing: Double

    package init(columns: Int, containerWidth: Double, leadingInset: Double, trailingInset: Double, interItemSpacing: Double) {
        self.columns = columns
        self.containerWidth = containerWidth
        self.leadingInset = leadingInset
        self.trailingInset = trailingInset
        self.interItemSpacing = interItemSpacing
    }

    /// floor((container − leading − trailing − spacing × (columns − 1)) / columns), points.
    package var itemWidth: Double {
        let available = containerWidth - leadingInset - trailingInset - interItemSpacing * Double(columns - 1)
        return (available / Double(columns)).rounded(.down)
    }
}

extension SlotKind {
    /// A mask that hides part of the slot: a circle, or corners rounded by more than nothing.
    package var hasVisibleMask: Bool {
        switch mask {
        case .none: false
        case .circle: true
        case .cornerRadius(let points): points > 0
        }
    }
}
