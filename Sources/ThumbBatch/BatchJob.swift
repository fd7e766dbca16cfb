import Foundation
import ThumbImaging

/// One unit of batch work: an asset and the kinds (and scale) to render it into.
/// JSON form (a line of a jobs file, or a spool job file):
/// `{"asset": "photos/IMG_0001.jpg", "kinds": ["large", "contact-avatar"], "scale": 3}`
/// (`kinds` and `scale` optional: the command's `--kinds`, every scale of each kind).
public struct BatchJob: Sendable, Equatable {
    /// Path relative to the asset root.
    public var asset: String
    public var kinds: [String]?
    public var scale: Int?
    /// Where the job came from (a claimed spool file), not part of its JSON.
    public var origin: String?

    public init(asset: String, kinds: [String]? = nil, scale: Int? = nil, origin: String? = nil) {
        self.asset = asset
        self.kinds = kinds
        self.scale = scale
        self.origin = origin
    }

    /// Why a job description was refused.
    public struct FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    public static func parse(_ data: Data) throws(FormatError) -> BatchJob {
        guard let value = try? JSONSerialization.jsonObject(with: data), let object = value as? [String: Any] else {
            throw FormatError(reason: "not a JSON object")
        }
        let known: Set<String> = ["asset", "kinds", "scale"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw FormatError(reason: "unknown key '\(unknown)' (expected asset, kinds, scale)")
        }
        guard let asset = object["asset"] as? String, !asset.isEmpty else {
            throw FormatError(reason: "'asset' must be a non-empty string (a path under the asset folder)")
        }
        var kinds: [String]?
        if let value = object["kinds"] {
            guard let list = value as? [String], !list.isEmpty else { throw FormatError(reason: "'kinds' must be a non-empty list of kind names") }
            kinds = list
        }
        var scale: Int?
        if let value = object["scale"] {
            guard let number = value as? Int, !(value is Bool), SlotSpec.supportedScales.contains(number) else {
                throw FormatError(reason: "'scale' must be 1 to 4")
            }
            scale = number
        }
        return BatchJob(asset: asset, kinds: kinds, scale: scale)
    }

    public var json: Data {
        var object: [String: Any] = ["asset": asset]
        if let kinds { object["kinds"] = kinds }
        if let scale { object["scale"] = scale }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
