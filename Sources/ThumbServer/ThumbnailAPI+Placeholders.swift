import Foundation
import ThumbConfiguration
import ThumbImaging
import ThumbSystem
import ThumbPipeline

/// `GET /v1/placeholders?assets=a.jpg,b.jpg` or `POST /v1/placeholders` `{"assets": ["a.jpg", …]}`,
/// parsed: a screen's worth of asset paths, each bounded as every other endpoint bounds one.
package struct PlaceholdersCall: Sendable, Equatable {
    package var assets: [String]

    /// Most assets in one call: a screen of cells is ~50; more is a prefetch's job.
    package static let maxAssets = 200

    static let shape = #"body must be JSON {"assets": ["path", …]} with 1 to 200 paths"#

    /// A pure function of the body: the `placeholders-body` fuzz target drives it directly.
    package static func parse(body: [UInt8]) throws(APIError) -> PlaceholdersCall {
        let value: JSONValue
        do { value = try JSONValue.decode(Data(body)) } catch { throw .badRequest("\(shape): \(error.reason)") }
        guard case .object(let object) = value else { throw .badRequest("\(shape), got \(value.kindDescription)") }
        if let unknown = object.keys.sorted().first(where: { $0 != "assets" }) {
            throw .badRequest("unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' (\(shape))")
        }
        guard case .array(let items)? = object["assets"], !items.isEmpty else {
            throw .badRequest("'assets' must be a non-empty array of asset paths (\(shape))")
        }
        guard items.count <= maxAssets else { throw .badRequest("'assets' lists \(items.count) paths, at most \(maxAssets)") }
        var assets: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw .badRequest("'assets[\(index)]' must be a string, got \(item.kindDescription)")
            }
            try check(text, field: "assets[\(index)]")
            assets.append(text)
        }
        return PlaceholdersCall(assets: assets)
    }

    /// The GET form: `assets` is a comma-separated list, each path percent-encoded (a comma in
    /// a path is sent as `%2C`; the list is split before the escapes are decoded).
    package static func parse(query: [String: String]) throws(APIError) -> PlaceholdersCall {
        if let unknown = query.keys.sorted().first(where: { $0 != "assets" }) {
            throw .badQuery("unknown parameter '\(DisplayText.truncated(unknown, maxBytes: 40))' (expected assets=path,path,…)")
        }
        guard let list = query["assets"], !list.isEmpty else {
            throw .badQuery("'assets' must list 1 to \(maxAssets) comma-separated asset paths")
        }
        let parts = list.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxAssets else { throw .badQuery("'assets' lists \(parts.count) paths, at most \(maxAssets)") }
        var assets: [String] = []
        for (index, part) in parts.enumerated() {
            let path = try PercentDecoding.decode(part, field: "assets[\(index)]")
            try check(path, field: "assets[\(index)]")
            assets.append(path)
        }
        return PlaceholdersCall(assets: assets)
    }

    private static func check(_ path: String, field: String) throws(APIError) {
        guard (1...PipelineRequest.maxAssetPathBytes).contains(path.utf8.count), !path.utf8.contains(0) else {
            throw .badRequest("'\(field)' must be 1 to \(PipelineRequest.maxAssetPathBytes) bytes without NUL, "
                              + "this one is \(path.utf8.count) bytes")
        }
    }
}

extension ThumbnailAPI {
    /// One JSON object for every asset of the call: `ready` with the hash, colour and version
    /// tag; `pending` (queued at prefetch priority) for an existing asset not decoded yet;
    /// `failed` for one remembered as undecodable; `missing` for no such asset. Never a failure
    /// of the whole call for one asset.
    func placeholders(_ call: PlaceholdersCall) -> HTTPResponse {
        let (kind, scale) = placeholderKind()
        let states = pipeline.placeholders.states(ofAssets: call.assets, rendering: kind, scale: scale)
        // By path as bytes: NFC and NFD twins are two assets, each with its own member.
        var answers: [ExactPath: String] = [:]
        for (asset, state) in zip(call.assets, states) {
            answers[ExactPath(asset)] = switch state {
            case .known(let placeholder, let version):
                #"{"averageColor":"\#(placeholder.averageColorHex)","status":"ready","thumbhash":"\#(placeholder.thumbHashBase64)","#
                    + #""version":"\#(version)"}"#
            case .pending: #"{"status":"pending"}"#
            case .failed(let reason): #"{"message":\#(JSONLines.string(reason)),"status":"failed"}"#
            case .missing(let reason): #"{"message":\#(JSONLines.string(reason)),"status":"missing"}"#
            }
        }
        // Written by hand: JSONSerialization spent three quarters of a 50-asset answer bridging
        // and sorting dictionaries (3.3 ms of it); the same object, keys sorted.
        let members = answers.keys.sorted { Array($0.text.utf8).lexicographicallyPrecedes($1.text.utf8) }
            .map { "\(JSONLines.string($0.text)):\(answers[$0] ?? "{}")" }
        let body = #"{"placeholders":{"# + members.joined(separator: ",") + "}}\n"
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
    }

    /// The render an unknown asset's placeholder rides on: the smallest pre-generated kind (the
    /// watcher would render it anyway), else the smallest kind, at its first scale.
    func placeholderKind() -> (SlotKind, Int) {
        let kinds = catalog.withLock { $0.kinds.values }
        func pixels(_ kind: SlotKind) -> Int {
            let size = kind.pixelSize(scale: kind.scales.first ?? 1)
            return size.width * size.height
        }
        let ordered = kinds.sorted { (pixels($0), $0.name) < (pixels($1), $1.name) }
        let chosen = ordered.first(where: \.pregenerate) ?? ordered.first ?? Self.fallbackPlaceholderKind
        return (chosen, chosen.scales.first ?? 1)
    }

    /// With no kinds configured at all: a small fit render, enough for the decode.
    static let fallbackPlaceholderKind = SlotKind(name: "placeholder", widthPoints: 64, heightPoints: 64, mode: .fit)

    /// The placeholder as a JSON member.
    static func placeholderObject(_ placeholder: Placeholder) -> [String: Any] {
        ["thumbhash": placeholder.thumbHashBase64, "averageColor": placeholder.averageColorHex]
    }

    /// A miss whose wait ran out. `wait=0` with a known placeholder: 202 and the placeholder
    /// (placeholder first: the cell paints it now, the render goes on). Otherwise 504, carrying
    /// the placeholder in `X-Thumbd-Placeholder` and the body when known.
    static func unfinishedResponse(waitMilliseconds: Int, placeholder: Placeholder?) -> HTTPResponse {
        var headers: [(String, String)] = [("Retry-After", "1")]
        if let placeholder { headers.append(("X-Thumbd-Placeholder", placeholder.thumbHashBase64)) }
        if waitMilliseconds == 0, let placeholder {
            return .json(202, ["status": "pending", "placeholder": placeholderObject(placeholder),
                               "message": "not rendered yet; it is being rendered"], headers: headers)
        }
        return .error(504, "timeout", "no thumbnail within \(waitMilliseconds) ms; it is still being rendered",
                      extra: placeholder.map { ["placeholder": placeholderObject($0)] } ?? [:], headers: headers)
    }
}
