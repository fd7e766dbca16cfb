/// Where attention placed the `fill` crop of one output shape on one decoded version of an
/// asset: the crop's centre, in fractions of the displayed image. Placing needs the whole frame
/// (a JPEG's every column decoded, the saliency map scored); a later render of the same version
/// and shape that is handed this (`ThumbnailRequest.placedCentre`) crops there at the cost of a
/// centred crop. The pipeline keeps these beside the version's placeholder.
package struct AttentionPlacement: Sendable, Hashable {
    /// The output the crop was placed for (`ThumbnailRequest.placementShape`).
    package var shape: String
    /// The crop's centre, 0...1 of the displayed image.
    package var centre: FocusRegion

    package init(shape: String, centre: FocusRegion) {
        self.shape = shape
        self.centre = centre
    }

    /// Longest shape text a placement may carry (`"a1:4096x4096r1234567nu"` is 22).
    package static let maxShapeBytes = 40

    /// Bumped whenever attention would place crops elsewhere (its cues, weights, grid or bias):
    /// it leads every shape, so placements stored by an older build are placed again.
    package static let algorithmVersion = 1
}

extension ThumbnailRequest {
    /// What an attention placement depends on besides the image: the algorithm's version, the
    /// slot's pixel size, its mask in pixels (the score counts only what the mask keeps), whether
    /// the image is turned upright (the centre is in fractions of the frame the crop is placed
    /// in) and whether it may be enlarged (the mask's size on a small source). nil when this
    /// request's crop is not placed by attention (a `fit`, a `centre` crop, a `focus` crop with a focus).
    package var placementShape: String? {
        guard kind.mode == .fill else { return nil }
        switch (kind.crop, focus) {
        case (.centre, _), (.focus, _?): return nil
        case (.attention, _), (.focus, nil): break
        }
        let size = kind.pixelSize(scale: scale)
        let mask = switch kind.mask {
        case .none: ""
        case .circle: "c"
        case .cornerRadius(let points): "r\(CheckedConversion.clampedInteger(points * Double(scale) * 10, to: 0...1_000_000))"
        }
        return "a\(AttentionPlacement.algorithmVersion):\(size.width)x\(size.height)\(mask)"
            + (appliesOrientation ? "" : "n") + (kind.upscale ? "u" : "")
    }
}

extension CropRectangle {
    /// The rectangle's centre in fractions of a `width` × `height` image, or nil when that is
    /// not a point of the unit square (an empty image, a rectangle outside it).
    func centre(inWidth width: Double, height: Double) -> FocusRegion? {
        guard width > 0, height > 0 else { return nil }
        return FocusRegion(x: (x + self.width / 2) / width, y: (y + self.height / 2) / height)
    }
}
