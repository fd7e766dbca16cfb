import ThumbImaging

extension ThumbConfig {
    /// Widest grid container and largest inset or spacing, points: far past any screen, and
    /// small enough that the layout arithmetic stays exact.
    static let maxGridPoints: Double = 100_000

    /// One entry of `kinds`: every length held to `SlotBounds`, every scale a `DisplayScale`,
    /// and every scale's output to `maxOutputPixels`.
    static func parseKind(name: String, fields: JSONFields, maxOutputPixels: Int) throws(ConfigError) -> SlotKind {
        try fields.allowOnly(["width", "height", "aspectRatio", "grid", "scales", "mode", "mask", "cornerRadius",
                              "upscale", "pregenerate", "encoding", "crop", "animation"])
        let maxPoints = SlotBounds.maxPoints
        var kind = SlotKind(name: name, widthPoints: 0, heightPoints: 0)
        if let grid = try fields.fields("grid") {
            guard !fields.object.keys.contains("width") else { throw fields.fail("width", "a grid kind takes its width from 'grid'") }
            try grid.allowOnly(["columns", "containerWidth", "leadingInset", "trailingInset", "spacing"])
            guard let columns = try grid.integer("columns", in: 1...64) else { throw grid.fail("columns", "is required") }
            guard let container = try grid.positiveNumber("containerWidth", atMost: maxGridPoints, unit: "points") else {
                throw grid.fail("containerWidth", "is required")
            }
            let layout = GridLayout(columns: columns, containerWidth: container,
                                    leadingInset: try grid.number("leadingInset", in: 0...maxGridPoints, unit: "points") ?? 0,
                                    trailingInset: try grid.number("trailingInset", in: 0...maxGridPoints, unit: "points") ?? 0,
                                    interItemSpacing: try grid.number("spacing", in: 0...maxGridPoints, unit: "points") ?? 0)
            guard layout.itemWidth >= 1 && layout.itemWidth <= maxPoints else {
                throw fields.fail("grid", "gives an item width of \(JSONFields.format(layout.itemWidth)) pt "
                                  + "(it must be 1 to \(SlotBounds.maxSidePoints) points)")
            }
            kind.widthPoints = layout.itemWidth
        } else {
            guard let width = try fields.positiveNumber("width", atMost: maxPoints, unit: "points") else {
                throw fields.fail("width", "is required (points), or give 'grid'")
            }
            kind.widthPoints = width
        }
        if let height = try fields.positiveNumber("height", atMost: maxPoints, unit: "points") {
            guard !fields.object.keys.contains("aspectRatio") else { throw fields.fail("aspectRatio", "give 'height' or 'aspectRatio', not both") }
            kind.heightPoints = height
        } else if let ratio = try fields.number("aspectRatio", in: (1 / maxPoints)...maxPoints, unit: "width per height") {
            let height = (kind.widthPoints / ratio).rounded()
            guard height >= 1 && height <= maxPoints else {
                throw fields.fail("aspectRatio", "gives a height of \(JSONFields.format(height)) pt "
                                  + "(width / aspectRatio must be 1 to \(SlotBounds.maxSidePoints) points)")
            }
            kind.heightPoints = height
        } else {
            throw fields.fail("height", "is required (points), or give 'aspectRatio' (width / height)")
        }
        if let scales = try fields.array("scales") {
            guard !scales.isEmpty else { throw fields.fail("scales", "must list at least one scale") }
            kind.scales = []
            for item in scales {
                guard case .number(let number) = item, let scale = DisplayScale(json: number) else {
                    throw fields.fail("scales", "each scale must be \(DisplayScale.rangeDescription), got \(item.kindDescription)")
                }
                kind.scales.append(scale.value)
            }
        }
        if let mode = try fields.string("mode") {
            guard let parsed = SlotKind.ContentMode(rawValue: mode) else { throw fields.fail("mode", "must be 'fill' or 'fit'") }
            kind.mode = parsed
        }
        if let mask = try fields.string("mask") {
            guard mask == "circle" || mask == "none" else { throw fields.fail("mask", "must be 'circle' or 'none' (use cornerRadius for rounded corners)") }
            kind.mask = mask == "circle" ? .circle : .none
        }
        if let radius = try fields.number("cornerRadius", in: 0...maxPoints, unit: "points") {
            guard kind.mask == .none else { throw fields.fail("cornerRadius", "cannot be combined with mask 'circle'") }
            kind.mask = .cornerRadius(points: radius)
        }
        if let crop = try fields.string("crop") {
            guard let parsed = SlotKind.CropMode(configText: crop) else {
                throw fields.fail("crop", "must be 'centre' (or 'center'), 'attention' or 'focus', got '\(DisplayText.truncated(crop, maxBytes: 40))'")
            }
            // A fit shows the whole image: a crop mode on it would be silently meaningless.
            guard parsed == .centre || kind.mode == .fill else { throw fields.fail("crop", "applies to mode 'fill' only") }
            kind.crop = parsed
        } else if kind.mode == .fill, kind.hasVisibleMask {
            // A masked cell (the circle avatar, the rounded product image) hides its corners:
            // a centred crop there cuts the subject more often than anywhere, and attention keeps
            // it where the geometry allows (Benchmarks: crop-bench). An explicit "crop" wins.
            kind.crop = .attention
        }
        if let animation = try fields.string("animation") {
            guard let parsed = SlotKind.Animation(rawValue: animation) else {
                throw fields.fail("animation", "must be 'still' or 'keep', got '\(DisplayText.truncated(animation, maxBytes: 40))'")
            }
            kind.animation = parsed
        }
        kind.upscale = try fields.bool("upscale") ?? false
        kind.pregenerate = try fields.bool("pregenerate") ?? false
        do {
            try SlotSpec.validate(kind, in: name, maxOutputPixels: maxOutputPixels)
        } catch {
            throw fields.fail("", error.reason)
        }
        return kind
    }
}
