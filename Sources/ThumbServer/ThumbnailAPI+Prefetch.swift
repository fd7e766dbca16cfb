import Foundation
import ThumbConfiguration
package import ThumbImaging
import ThumbPipeline

/// `POST /v1/prefetch` `{"assets": ["path", …], "kinds": ["kind", …], "scale": N?}`, parsed:
/// counts, sizes and the scale bounded, every kind resolved (and held to `maxOutputPixels`).
package struct PrefetchCall: Sendable {
    /// One kind to render every asset into, at these scales.
    package struct Work: Sendable {
        package var kind: SlotKind
        package var scales: [Int]
    }

    package var assets: [String]
    package var work: [Work]
    /// The request's `Accept`: a prefetch warms the formats the same client's GETs will choose.
    package var accept: String?

    /// Most assets in one prefetch.
    package static let maxAssets = 10_000
    /// Most kinds (names or inline specs) in one prefetch: an app has a handful of cell kinds,
    /// and each inline spec is a new cache key for every asset.
    package static let maxKinds = 32
    /// Most thumbnails (assets × kinds × scales) in one prefetch.
    package static let maxThumbnails = 10_000

    static let shape = #"body must be JSON {"assets": ["path", …], "kinds": ["kind", …], "scale": N?}"#

    /// Thumbnails this prefetch asks for.
    package var thumbnailCount: Int { assets.count * work.reduce(0) { $0 + $1.scales.count } }

    /// A pure function of the body and the kinds: the prefetch fuzz target drives it directly.
    package static func parse(body: [UInt8], catalog: SlotCatalog) throws(APIError) -> PrefetchCall {
        let value: JSONValue
        do { value = try JSONValue.decode(Data(body)) } catch { throw .badRequest("\(shape): \(error.reason)") }
        guard case .object(let object) = value else { throw .badRequest("\(shape), got \(value.kindDescription)") }
        if let unknown = object.keys.sorted().first(where: { !["assets", "kinds", "scale"].contains($0) }) {
            throw .badRequest("unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' (\(shape))")
        }
        let assets = try strings(object["assets"], field: "assets", maxCount: maxAssets, what: "asset paths")
        for (index, asset) in assets.enumerated() {
            guard (1...PipelineRequest.maxAssetPathBytes).contains(asset.utf8.count), !asset.utf8.contains(0) else {
                throw .badRequest("'assets[\(index)]' must be 1 to \(PipelineRequest.maxAssetPathBytes) bytes without NUL, "
                                  + "this one is \(asset.utf8.count) bytes")
            }
        }
        let kindNames = try strings(object["kinds"], field: "kinds", maxCount: maxKinds, what: "kind names or inline specs")
        var scale: DisplayScale?
        if let given = object["scale"] {
            guard case .number(let number) = given, let parsed = DisplayScale(json: number) else {
                throw .badRequest("'scale' must be \(DisplayScale.rangeDescription), got \(given.kindDescription)")
            }
            scale = parsed
        }
        var work: [Work] = []
        for (index, name) in kindNames.enumerated() {
            do {
                let selection = try catalog.resolve(name, scale: scale)
                work.append(Work(kind: selection.kind, scales: selection.scales))
            } catch {
                throw APIError(400, "badKind", "'kinds[\(index)]': \(error.description)")
            }
        }
        let call = PrefetchCall(assets: assets, work: work)
        guard call.thumbnailCount <= maxThumbnails else {
            throw APIError(413, "tooMany", "at most \(maxThumbnails) thumbnails per prefetch (assets × kinds × scales), "
                           + "this one asks for \(call.thumbnailCount)")
        }
        return call
    }

    /// A non-empty JSON array of at most `maxCount` strings.
    private static func strings(_ value: JSONValue?, field: String, maxCount: Int, what: String) throws(APIError) -> [String] {
        guard case .array(let items)? = value, !items.isEmpty else {
            throw .badRequest("'\(field)' must be a non-empty array of \(what) (\(shape))")
        }
        guard items.count <= maxCount else {
            throw .badRequest("'\(field)' lists \(items.count) entries, at most \(maxCount)")
        }
        var texts: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw .badRequest("'\(field)[\(index)]' must be a string, got \(item.kindDescription)")
            }
            texts.append(text)
        }
        return texts
    }
}
