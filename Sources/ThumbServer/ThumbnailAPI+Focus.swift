import Foundation
import ThumbConfiguration
package import ThumbImaging
import ThumbPipeline

/// `GET`, `PUT` or `DELETE /v1/assets/{asset path}/focus`, parsed: the path decoded and bounded
/// (a `..` refused here, confinement left to the pipeline's resolve), a PUT's body a `FocusRegion`.
package struct FocusCall: Sendable {
    package enum Action: Sendable, Equatable {
        case get
        case set(FocusRegion)
        case remove
    }

    package var assetPath: String
    package var action: Action

    static let prefix = "/v1/assets/"
    static let suffix = "/focus"

    static func parse(_ request: HTTPRequest, method: String) throws(APIError) -> FocusCall {
        let path = request.path
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.utf8.count > prefix.utf8.count + suffix.utf8.count else {
            throw .badRequest("expected \(method) /v1/assets/{asset path}/focus")
        }
        let utf8 = path.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: prefix.utf8.count)
        let end = utf8.index(utf8.endIndex, offsetBy: -suffix.utf8.count)
        let assetPath = try PercentDecoding.decode(path[start..<end], field: "the asset path")
        guard assetPath.utf8.count <= PipelineRequest.maxAssetPathBytes else {
            throw .badRequest("an asset path is at most \(PipelineRequest.maxAssetPathBytes) bytes, this one \(assetPath.utf8.count)")
        }
        guard !assetPath.split(separator: "/", omittingEmptySubsequences: false).contains("..") else {
            throw .badRequest("the asset path may not contain '..'")
        }
        let action: Action = switch method {
        case "PUT": .set(try FocusBody.parse(request.body))
        case "DELETE": .remove
        default: .get
        }
        return FocusCall(assetPath: assetPath, action: action)
    }
}

/// The body of `PUT /v1/assets/{path}/focus`: `{"x": 0.3, "y": 0.2}` (a point) or with
/// `"width"` and `"height"` (a region), fractions 0–1 of the displayed image, origin top left.
package enum FocusBody {
    /// Longest body, bytes: four numbers with room for spaces and long decimals.
    package static let maxBytes = 1024
    /// How far past 1 a region's far edge may fall from decimal rounding (0.7 + 0.3) and be
    /// clamped to the image's edge rather than refused.
    static let edgeTolerance = 1e-9

    static let shape = #"body must be JSON {"x": 0…1, "y": 0…1} (a point) or with "width" and "height" (a region)"#

    /// A pure function of the body: the focus-body fuzz target drives it directly.
    package static func parse(_ body: [UInt8]) throws(APIError) -> FocusRegion {
        guard body.count <= maxBytes else {
            throw APIError(413, "bodyTooLarge", "a focus body is at most \(maxBytes) bytes, this one \(body.count)")
        }
        let value: JSONValue
        do { value = try JSONValue.decode(Data(body)) } catch { throw .badRequest("\(shape): \(error.reason)") }
        guard case .object(let object) = value else { throw .badRequest("\(shape), got \(value.kindDescription)") }
        if let unknown = object.keys.sorted().first(where: { !["x", "y", "width", "height"].contains($0) }) {
            throw .badRequest("unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' (\(shape))")
        }
        func fraction(_ key: String) throws(APIError) -> Double? {
            guard let given = object[key] else { return nil }
            guard case .number(let number) = given, number.isFinite, (0.0...1.0).contains(number) else {
                throw .badRequest("'\(key)' must be a number from 0 to 1 (a fraction of the displayed image), got \(given.kindDescription)")
            }
            return number
        }
        guard let x = try fraction("x") else { throw .badRequest("'x' is required (\(shape))") }
        guard let y = try fraction("y") else { throw .badRequest("'y' is required (\(shape))") }
        let width = try fraction("width")
        let height = try fraction("height")
        guard (width == nil) == (height == nil) else {
            throw .badRequest("give both 'width' and 'height' (a region) or neither (a point)")
        }
        let w = try withinImage(origin: x, length: width ?? 0, names: ("x", "width"))
        let h = try withinImage(origin: y, length: height ?? 0, names: ("y", "height"))
        guard let focus = FocusRegion(x: x, y: y, width: w, height: h) else {
            throw .badRequest("\(shape): the region must lie inside the image")
        }
        return focus
    }

    /// The length, clamped to the image's edge when rounding put it a hair past; a region that
    /// reaches out of the image is refused.
    private static func withinImage(origin: Double, length: Double, names: (String, String)) throws(APIError) -> Double {
        let end = origin + length
        if end <= 1 { return length }
        guard end <= 1 + edgeTolerance else {
            throw .badRequest("'\(names.0)' + '\(names.1)' must be at most 1 (the region inside the image), got \(end)")
        }
        return 1 - origin
    }
}

extension ThumbnailAPI {
    /// Answers a focus call: 200 with the stored focus (GET, PUT), 204 (DELETE); 404 `noFocus`
    /// when there is none to get or remove; the asset's own refusals as the thumbnails route's.
    func focus(_ call: FocusCall) -> HTTPResponse {
        do throws(FocusError) {
            switch call.action {
            case .get:
                let found = try pipeline.focus.region(ofAssetPath: call.assetPath)
                guard let focus = found.focus else { return Self.noFocus(found.assetPath) }
                return .json(200, Self.focusObject(focus, assetPath: found.assetPath))
            case .set(let focus):
                let path = try pipeline.focus.set(focus, ofAssetPath: call.assetPath)
                return .json(200, Self.focusObject(focus, assetPath: path))
            case .remove:
                let removed = try pipeline.focus.remove(ofAssetPath: call.assetPath)
                return removed.removed ? HTTPResponse(status: 204) : Self.noFocus(removed.assetPath)
            }
        } catch {
            switch error {
            case .asset(let failure): return .failure(failure)
            case .index: return .error(503, "indexUnavailable", error.description, headers: [("Retry-After", "1")])
            }
        }
    }

    static func noFocus(_ assetPath: String) -> HTTPResponse {
        .error(404, "noFocus", "\(DisplayText.truncated(assetPath)) has no focus")
    }

    static func focusObject(_ focus: FocusRegion, assetPath: String) -> [String: Any] {
        ["asset": assetPath, "focus": ["x": focus.x, "y": focus.y, "width": focus.width, "height": focus.height]]
    }
}

extension ThumbnailAPI {
    /// `?as=path`'s `crop`: the part of the displayed source shown, in its pixels; JSON null when
    /// unknown (a thumbnail indexed before crops were recorded).
    static func cropObject(_ crop: CropRectangle?) -> Any {
        guard let crop else { return NSNull() }
        return ["x": crop.x, "y": crop.y, "width": crop.width, "height": crop.height]
    }
}
