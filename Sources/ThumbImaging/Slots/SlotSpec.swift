/// A bad slot name or inline spec: `text` is what was given, `reason` what is wrong with it.
public struct SlotSpecError: Error, Equatable, Sendable, CustomStringConvertible {
    public var text: String
    public var reason: String
    public var description: String { "bad slot '\(text)': \(reason)" }
}

/// A resolved slot: a kind and, when the text named one (`large@2x`, `48x48@3x,fill`), a scale.
public struct SlotSelection: Sendable, Equatable {
    public var kind: SlotKind
    public var scale: Int?

    public init(kind: SlotKind, scale: Int?) {
        self.kind = kind
        self.scale = scale
    }

    /// The scales to render: the one named, or every scale the kind declares.
    public var scales: [Int] { scale.map { [$0] } ?? kind.scales }
}

public enum SlotSpec {
    public static let supportedScales = 1...4
    public static let maxPixelsPerSide = 8192

    /// Parses an inline spec: `WxH[@Nx][,fill|fit][,circle|,radius=R][,upscale]`, sizes in points.
    /// The kind's name is the spec itself with commas as dashes (safe in file names).
    public static func parse(_ text: String) throws(SlotSpecError) -> SlotSelection {
        func fail(_ reason: String) -> SlotSpecError { SlotSpecError(text: text, reason: reason) }
        var parts = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !parts.isEmpty else { throw fail("empty spec") }
        var sizeText = parts.removeFirst()
        var scale: Int?
        if let at = sizeText.firstIndex(of: "@") {
            scale = try parseScale(String(sizeText[sizeText.index(after: at)...]), in: text)
            sizeText = String(sizeText[..<at])
        }
        let dimensions = sizeText.split(separator: "x", omittingEmptySubsequences: false)
        guard dimensions.count == 2, let width = Double(dimensions[0]), let height = Double(dimensions[1]),
              width > 0, height > 0, width.isFinite, height.isFinite else {
            throw fail("size must be WIDTHxHEIGHT in points, e.g. 48x48")
        }
        var kind = SlotKind(name: "", widthPoints: width, heightPoints: height, scales: [scale ?? 1])
        for option in parts {
            switch option {
            case "fill": kind.mode = .fill
            case "fit": kind.mode = .fit
            case "circle": kind.mask = .circle
            case "upscale": kind.upscale = true
            case _ where option.hasPrefix("radius="):
                guard let radius = Double(option.dropFirst("radius=".count)), radius >= 0, radius.isFinite else {
                    throw fail("radius must be a number of points, e.g. radius=8")
                }
                kind.mask = .cornerRadius(points: radius)
            default:
                throw fail("unknown option '\(option)' (expected fill, fit, circle, radius=N or upscale)")
            }
        }
        try validate(kind, in: text)
        kind.name = ([sizeText] + parts).joined(separator: "-")
        return SlotSelection(kind: kind, scale: scale)
    }

    static func parseScale(_ text: String, in spec: String) throws(SlotSpecError) -> Int {
        let digits = text.hasSuffix("x") ? String(text.dropLast()) : text
        guard let scale = Int(digits), supportedScales.contains(scale) else {
            throw SlotSpecError(text: spec, reason: "scale must be 1x to 4x, got '\(text)'")
        }
        return scale
    }

    /// Checks that every scale of `kind` gives a sane pixel size.
    static func validate(_ kind: SlotKind, in text: String) throws(SlotSpecError) {
        for scale in kind.scales {
            guard supportedScales.contains(scale) else {
                throw SlotSpecError(text: text, reason: "scale must be 1 to 4, got \(scale)")
            }
            let size = kind.pixelSize(scale: scale)
            guard size.width <= maxPixelsPerSide, size.height <= maxPixelsPerSide else {
                throw SlotSpecError(text: text, reason: "\(size.width)x\(size.height) px exceeds \(maxPixelsPerSide) px a side")
            }
        }
    }
}

/// The registered kinds by name.
public struct SlotCatalog: Sendable, Equatable {
    public private(set) var kinds: [String: SlotKind]

    public init(kinds: [SlotKind] = []) {
        self.kinds = Dictionary(kinds.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Resolves a kind name (`large`, `contact-avatar@3x`) or an inline spec (`48x48@3x,fill,circle`).
    public func resolve(_ text: String) throws(SlotSpecError) -> SlotSelection {
        if let first = text.first, first.isNumber { return try SlotSpec.parse(text) }
        var name = text
        var scale: Int?
        if let at = text.lastIndex(of: "@") {
            name = String(text[..<at])
            scale = try SlotSpec.parseScale(String(text[text.index(after: at)...]), in: text)
        }
        guard let kind = kinds[name] else {
            let known = kinds.keys.sorted().joined(separator: ", ")
            throw SlotSpecError(text: text, reason: "no such kind (known: \(known.isEmpty ? "none" : known))")
        }
        return SlotSelection(kind: kind, scale: scale)
    }
}
