package import Foundation
import ThumbConfiguration
package import ThumbImaging
import ThumbPipeline

/// One unit of batch work: an asset and the kinds (and scale) to render it into.
/// JSON form (a line of a jobs file, a spool job file, a Redis `job` field):
/// `{"asset": "photos/IMG_0001.jpg", "kinds": ["large", "contact-avatar"], "scale": 3, "format": "webp"}`
/// (`kinds`, `scale` and `format` optional: the command's `--kinds`, every scale of each kind,
/// the command's `--format` or each kind's preferred format).
/// Every door parses into this type, bounded: see `parse`.
package struct BatchJob: Sendable, Equatable {
    /// Path relative to the asset root.
    package var asset: String
    package var kinds: [String]?
    package var scale: Int?
    /// The output format (any, AVIF included: a batch is off every request's path); nil: the
    /// command's default.
    package var format: EncoderSettings.Format?
    /// Where the job came from (a claimed spool file), not part of its JSON.
    package var origin: String?

    /// Largest job description (JSON line, spool file, `job` field), bytes.
    package static let maxJobBytes = 64 << 10
    /// Most kinds one job may name.
    package static let maxKinds = 32

    package init(asset: String, kinds: [String]? = nil, scale: Int? = nil, format: EncoderSettings.Format? = nil, origin: String? = nil) {
        self.format = format
        self.asset = asset
        self.kinds = kinds
        self.scale = scale
        self.origin = origin
    }

    /// Why a job description was refused: the field and its range, never more than a short
    /// prefix of what was given.
    package struct FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
        package init(reason: String) { self.reason = reason }
    }

    /// Parses one job's JSON. A pure function of its bytes: the job-line fuzz target drives it.
    package static func parse(_ data: Data) throws(FormatError) -> BatchJob {
        guard data.count <= maxJobBytes else {
            throw FormatError(reason: "a job is at most \(maxJobBytes) bytes, this one \(data.count)")
        }
        guard case .object(let object)? = try? JSONValue.decode(data) else { throw FormatError(reason: "not a JSON object") }
        return try parse(object)
    }

    /// The bounded fields of a job object.
    static func parse(_ object: [String: JSONValue]) throws(FormatError) -> BatchJob {
        if let unknown = object.keys.sorted().first(where: { !["asset", "kinds", "scale", "format"].contains($0) }) {
            throw FormatError(reason: "unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' (expected asset, kinds, scale, format)")
        }
        guard case .string(let asset)? = object["asset"], !asset.isEmpty else {
            throw FormatError(reason: "'asset' must be a non-empty string (a path under the asset folder)")
        }
        guard asset.utf8.count <= PipelineRequest.maxAssetPathBytes else {
            throw FormatError(reason: "'asset' is \(asset.utf8.count) bytes, at most \(PipelineRequest.maxAssetPathBytes)")
        }
        guard !asset.utf8.contains(0) else { throw FormatError(reason: "'asset' contains a NUL byte") }
        var kinds: [String]?
        if let value = object["kinds"] {
            guard case .array(let items) = value, !items.isEmpty else {
                throw FormatError(reason: "'kinds' must be a non-empty list of kind names")
            }
            guard items.count <= maxKinds else { throw FormatError(reason: "'kinds' lists \(items.count) kinds, at most \(maxKinds)") }
            var names: [String] = []
            for (index, item) in items.enumerated() {
                guard case .string(let name) = item else {
                    throw FormatError(reason: "'kinds[\(index)]' must be a kind name or inline spec, got \(item.kindDescription)")
                }
                try checkKind(name, field: "kinds[\(index)]")
                names.append(name)
            }
            kinds = names
        }
        var scale: Int?
        if let value = object["scale"] {
            guard case .number(let number) = value, let parsed = DisplayScale(json: number) else {
                throw FormatError(reason: "'scale' must be 1 to 4 (a whole number), got \(value.kindDescription)")
            }
            scale = parsed.value
        }
        var format: EncoderSettings.Format?
        if let value = object["format"] {
            guard case .string(let text) = value, let parsed = EncoderSettings.Format(rawValue: text) else {
                throw FormatError(reason: "'format' must be one of \(EncoderSettings.Format.allCases.map(\.rawValue).joined(separator: ", ")), "
                                  + "got \(value.kindDescription)")
            }
            format = parsed
        }
        return BatchJob(asset: asset, kinds: kinds, scale: scale, format: format)
    }

    /// What can be checked of a kind without the config: its size, and an inline spec in full
    /// (its bounds, against the largest output any config allows), so that a job that could
    /// never render fails here, as a malformed job, and not at render time.
    static func checkKind(_ name: String, field: String) throws(FormatError) {
        guard (1...SlotBounds.maxTextBytes).contains(name.utf8.count), !name.utf8.contains(0) else {
            throw FormatError(reason: "'\(field)' must be 1 to \(SlotBounds.maxTextBytes) bytes without NUL, this one is \(name.utf8.count) bytes")
        }
        do throws(SlotSpecError) {
            if name.first?.isNumber == true {
                _ = try SlotSpec.parse(name, maxOutputPixels: SlotBounds.outputPixelsCeiling)
            } else if let at = name.lastIndex(of: "@"), DisplayScale(text: name[name.index(after: at)...], allowsSuffix: true) == nil {
                throw SlotSpecError(text: name, reason: "scale must be 1x to 4x")
            }
        } catch {
            throw FormatError(reason: "'\(field)': \(error.description)")
        }
    }

    /// A Redis stream entry's fields, as the flat name/value list Redis delivers: either `job`
    /// (the JSON form) or `asset` with optional `kinds` (comma-separated, an inline spec keeping
    /// its options) and `scale`; other fields are the producer's own and are ignored. The same
    /// bounds as the JSON form. A pure function: the Redis-fields fuzz target drives it.
    package static func parse(redisFields fields: [String]) throws(FormatError) -> BatchJob {
        var values: [String: String] = [:]
        var index = 0
        while index + 1 < fields.count {
            values[fields[index]] = fields[index + 1]
            index += 2
        }
        if let json = values["job"] { return try parse(Data(json.utf8)) }
        guard let asset = values["asset"] else { throw FormatError(reason: "no 'job' field (JSON) and no 'asset' field") }
        var object: [String: JSONValue] = ["asset": .string(asset)]
        if let kinds = values["kinds"] {
            guard kinds.utf8.count <= maxJobBytes else { throw FormatError(reason: "'kinds' is \(kinds.utf8.count) bytes, at most \(maxJobBytes)") }
            object["kinds"] = .array(splitKinds(kinds).map { .string($0) })
        }
        if let text = values["scale"] {
            guard let scale = DisplayScale(text: text) else {
                throw FormatError(reason: "'scale' must be 1 to 4 (a whole number), got '\(DisplayText.truncated(text, maxBytes: 40))'")
            }
            object["scale"] = .number(Double(scale.value))
        }
        if let format = values["format"] {
            object["format"] = .string(DisplayText.truncated(format, maxBytes: 40))
        }
        return try parse(object)
    }

    /// "large,48x48@3x,fill,circle" → ["large", "48x48@3x,fill,circle"]: an inline spec's
    /// options stay with their spec.
    package static func splitKinds(_ text: String) -> [String] {
        var kinds: [String] = []
        for piece in text.split(separator: ",").map(String.init) {
            // The options of an inline spec (`SlotSpec`): they stay with the spec they follow.
            let isOption = ["fill", "fit", "circle", "upscale"].contains(piece) || piece.hasPrefix("radius=") || piece.hasPrefix("crop=")
            if isOption, let last = kinds.last, last.first?.isNumber == true {
                kinds[kinds.count - 1] = last + "," + piece
            } else {
                kinds.append(piece)
            }
        }
        return kinds
    }

    package var json: Data {
        var object: [String: Any] = ["asset": asset]
        if let kinds { object["kinds"] = kinds }
        if let scale { object["scale"] = scale }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
