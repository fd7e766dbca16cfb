/// A bad slot name or inline spec: `text` is what was given (shortened when long), `reason`
/// what is wrong with it.
package struct SlotSpecError: Error, Equatable, Sendable, CustomStringConvertible {
    package var text: String
    package var reason: String
    package var description: String { "bad slot '\(text)': \(reason)" }

    package init(text: some StringProtocol, reason: String) {
        self.text = DisplayText.truncated(text)
        self.reason = reason
    }
}

/// A resolved slot: a kind and, when the text named one (`large@2x`, `48x48@3x,fill`), a scale.
package struct SlotSelection: Sendable, Equatable {
    package var kind: SlotKind
    package var scale: Int?

    package init(kind: SlotKind, scale: Int?) {
        self.kind = kind
        self.scale = scale
    }

    /// The scales to render: the one named, or every scale the kind declares.
    package var scales: [Int] { scale.map { [$0] } ?? kind.scales }
}

package enum SlotSpec {
    package static let supportedScales = DisplayScale.range
    package static let maxPixelsPerSide = SlotBounds.maxPixelsPerSide

    /// Parses an inline spec: `WxH[@Nx][,fill|fit][,circle|,radius=R][,upscale][,crop=centre|attention|focus]`, sizes in points
    /// (plain decimals), each scale's output within `SlotBounds` and `maxOutputPixels`.
    /// The kind's name is the spec itself with commas as dashes (safe in file names).
    /// A pure function of its input: the fuzz target for inline specs drives it directly.
    package static func parse(_ text: String, maxOutputPixels: Int = ImageLimits().maxOutputPixels) throws(SlotSpecError) -> SlotSelection {
        func fail(_ reason: String) -> SlotSpecError { SlotSpecError(text: text, reason: reason) }
        guard text.utf8.count <= SlotBounds.maxTextBytes else {
            throw fail("a spec is at most \(SlotBounds.maxTextBytes) bytes, this one \(text.utf8.count)")
        }
        var parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty else { throw fail("empty spec") }
        var sizeText = parts.removeFirst()
        var scale: Int?
        if let at = sizeText.firstIndex(of: "@") {
            scale = try parseScale(String(sizeText[sizeText.index(after: at)...]), in: text)
            sizeText = String(sizeText[..<at])
        }
        let dimensions = sizeText.split(separator: "x", omittingEmptySubsequences: false)
        guard dimensions.count == 2, let width = SlotBounds.decimal(dimensions[0]), let height = SlotBounds.decimal(dimensions[1]) else {
            throw fail("size must be WIDTHxHEIGHT in points, e.g. 48x48")
        }
        var kind = SlotKind(name: "", widthPoints: width, heightPoints: height, scales: [scale ?? 1])
        for option in parts {
            switch option {
            case "fill": kind.mode = .fill
            case "fit": kind.mode = .fit
            case "circle": kind.mask = .circle
            case "upscale": kind.upscale = true
            case _ where option.hasPrefix("crop="):
                guard let crop = SlotKind.CropMode(configText: String(option.dropFirst("crop=".count))) else {
                    throw fail("crop must be crop=centre, crop=attention or crop=focus")
                }
                kind.crop = crop
            case _ where option.hasPrefix("radius="):
                guard let radius = SlotBounds.decimal(option.dropFirst("radius=".count)), radius <= SlotBounds.maxPoints else {
                    throw fail("radius must be a number of points from 0 to \(SlotBounds.maxSidePoints), e.g. radius=8")
                }
                kind.mask = .cornerRadius(points: radius)
            default:
                throw fail("unknown option '\(DisplayText.truncated(option, maxBytes: 40))' (expected fill, fit, circle, radius=N, upscale or crop=MODE)")
            }
        }
        guard kind.crop == .centre || kind.mode == .fill else { throw fail("crop= applies to fill only") }
        try validate(kind, in: text, maxOutputPixels: maxOutputPixels)
        kind.name = ([sizeText] + parts).joined(separator: "-")
        return SlotSelection(kind: kind, scale: scale)
    }

    /// `2x` or `2` (the text after `@`).
    static func parseScale(_ text: String, in spec: String) throws(SlotSpecError) -> Int {
        guard let scale = DisplayScale(text: text, allowsSuffix: true) else {
            throw SlotSpecError(text: spec, reason: "scale must be 1x to 4x, got '\(DisplayText.truncated(text, maxBytes: 40))'")
        }
        return scale.value
    }

    /// Checks that `kind` has sane sides and that every scale of it gives an output within
    /// `SlotBounds.maxPixelsPerSide` a side and `maxOutputPixels` in all, upscaled or not.
    package static func validate(_ kind: SlotKind, in text: String, maxOutputPixels: Int) throws(SlotSpecError) {
        let maxPoints = SlotBounds.maxSidePoints
        guard SlotBounds.isSide(kind.widthPoints), SlotBounds.isSide(kind.heightPoints) else {
            throw SlotSpecError(text: text, reason: "width and height must be more than 0 and at most \(maxPoints) points")
        }
        if case .cornerRadius(let radius) = kind.mask, !(radius.isFinite && radius >= 0 && radius <= SlotBounds.maxPoints) {
            throw SlotSpecError(text: text, reason: "the corner radius must be from 0 to \(maxPoints) points")
        }
        guard !kind.scales.isEmpty else { throw SlotSpecError(text: text, reason: "no scale to render at") }
        for scale in kind.scales {
            _ = try checkedPixelSize(kind, scale: scale, in: text, maxOutputPixels: maxOutputPixels)
        }
    }

    /// The pixel size of `kind` at `scale`, or why it is refused.
    static func checkedPixelSize(_ kind: SlotKind, scale: Int, in text: String, maxOutputPixels: Int) throws(SlotSpecError) -> PixelSize {
        guard DisplayScale(scale) != nil else {
            throw SlotSpecError(text: text, reason: "scale must be \(DisplayScale.rangeDescription), got \(scale)")
        }
        guard let size = kind.checkedPixelSize(scale: scale) else {
            throw SlotSpecError(text: text, reason: "at \(scale)x each side must be 1 to \(SlotBounds.maxPixelsPerSide) px "
                                + "(points × scale, rounded)")
        }
        guard size.pixelCount <= maxOutputPixels else {
            throw SlotSpecError(text: text, reason: "at \(scale)x the output is \(size) (\(size.pixelCount) px), "
                                + "over limits.maxOutputPixels (\(maxOutputPixels))")
        }
        return size
    }
}

/// The registered kinds by name, and the output cap every selection is held to.
package struct SlotCatalog: Sendable, Equatable {
    package private(set) var kinds: [String: SlotKind]
    /// `limits.maxOutputPixels`: no selection (a kind at a scale, an inline spec) may give more.
    package var maxOutputPixels: Int

    package init(kinds: [SlotKind] = [], maxOutputPixels: Int = ImageLimits().maxOutputPixels) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.maxOutputPixels = maxOutputPixels
    }

    /// Resolves a kind name (`large`, `contact-avatar@3x`) or an inline spec (`48x48@3x,fill,circle`);
    /// every scale it selects is checked against the bounds and `maxOutputPixels`.
    package func resolve(_ text: String) throws(SlotSpecError) -> SlotSelection {
        guard text.utf8.count <= SlotBounds.maxTextBytes else {
            throw SlotSpecError(text: text, reason: "a kind name or spec is at most \(SlotBounds.maxTextBytes) bytes, this one \(text.utf8.count)")
        }
        guard !text.utf8.contains(0) else { throw SlotSpecError(text: text, reason: "contains a NUL byte") }
        if let first = text.first, first.isNumber { return try SlotSpec.parse(text, maxOutputPixels: maxOutputPixels) }
        var name = text
        var scale: Int?
        if let at = text.lastIndex(of: "@") {
            name = String(text[..<at])
            scale = try SlotSpec.parseScale(String(text[text.index(after: at)...]), in: text)
        }
        guard let kind = kinds[name] else {
            let known = kinds.keys.sorted().joined(separator: ", ")
            throw SlotSpecError(text: text, reason: "no such kind (known: \(known.isEmpty ? "none" : DisplayText.truncated(known, maxBytes: 400)))")
        }
        let selection = SlotSelection(kind: kind, scale: scale)
        for scale in selection.scales {
            _ = try SlotSpec.checkedPixelSize(kind, scale: scale, in: text, maxOutputPixels: maxOutputPixels)
        }
        return selection
    }

    /// Resolves `text`, then renders it at `scale` instead when one is given (`?scale=`, a
    /// prefetch's or a job's scale), checked like any other selection.
    package func resolve(_ text: String, scale: DisplayScale?) throws(SlotSpecError) -> SlotSelection {
        var selection = try resolve(text)
        guard let scale else { return selection }
        _ = try SlotSpec.checkedPixelSize(selection.kind, scale: scale.value, in: text, maxOutputPixels: maxOutputPixels)
        selection.scale = scale.value
        return selection
    }
}
