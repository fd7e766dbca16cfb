import Foundation
import ThumbAccess
import ThumbConfiguration
import ThumbImaging
import ThumbPipeline
import ThumbSystem

/// `GET /v1/assets?prefix=&after=&limit=`: a page of the asset listing in byte order of the path.
package struct AssetListCall: Sendable, Equatable {
    package var prefix = ""
    package var after = ""
    package var limit = AssetListCall.defaultLimit

    package static let defaultLimit = 100
    package static let maxLimit = AssetListStore.maxPageLength

    /// A pure function of the query (the asset-list fuzz target drives it).
    package static func parse(query: [String: String]) throws(APIError) -> AssetListCall {
        if let unknown = query.keys.sorted().first(where: { !["prefix", "after", "limit"].contains($0) }) {
            throw .badQuery("unknown parameter '\(DisplayText.truncated(unknown, maxBytes: 40))' (expected prefix, after, limit)")
        }
        var call = AssetListCall()
        for (name, target) in [("prefix", \AssetListCall.prefix), ("after", \AssetListCall.after)] {
            guard let raw = query[name] else { continue }
            let text = try PercentDecoding.decode(raw, field: name)
            guard text.utf8.count <= PipelineRequest.maxAssetPathBytes else {
                throw .badQuery("'\(name)' is at most \(PipelineRequest.maxAssetPathBytes) bytes, this one \(text.utf8.count)")
            }
            call[keyPath: target] = text
        }
        if let raw = query["limit"] {
            let text = try PercentDecoding.decode(raw, field: "limit")
            // At most 4 digits are read: a long run of them is refused, never converted.
            guard (1...4).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let limit = Int(text), (1...maxLimit).contains(limit) else {
                throw .badQuery("'limit' must be an integer from 1 to \(maxLimit), got '\(DisplayText.truncated(text, maxBytes: 20))'")
            }
            call.limit = limit
        }
        return call
    }
}

/// `POST /v1/signatures`: signed thumbnail URLs for a `client` caller (a page's back end that
/// holds no signing key): `{"urls": [{"kind", "asset", "scale"?, "format"?}], "expiresIn"?: seconds, "key"?: id}`.
package struct SignaturesCall: Sendable, Equatable {
    package struct Wanted: Sendable, Equatable {
        package var kind: String
        package var asset: String
        package var scale: Int?
        package var format: String?
    }

    package var urls: [Wanted]
    package var expiresInSeconds: Int?
    package var keyID: String?

    package static let maxURLs = 1000
    /// Ten years: past that a URL is as good as unexpiring, and the sum cannot overflow.
    package static let maxExpiresInSeconds = 10 * 366 * 86_400
    static let formats: Set<String> = ["auto", "jpeg", "png", "webp", "avif"]
    static let shape = #"body must be JSON {"urls": [{"kind": …, "asset": …, "scale"?: 1…4, "format"?: …}, …], "expiresIn"?: seconds, "key"?: id}"#

    /// A pure function of the body (the signatures-body fuzz target drives it).
    package static func parse(body: [UInt8]) throws(APIError) -> SignaturesCall {
        guard body.count <= 512 * 1024 else { throw APIError(413, "bodyTooLarge", "a signatures body is at most 512 KiB, this one \(body.count) bytes") }
        let value: JSONValue
        do { value = try JSONValue.decode(Data(body)) } catch { throw .badRequest("\(shape): \(error.reason)") }
        guard case .object(let object) = value else { throw .badRequest("\(shape), got \(value.kindDescription)") }
        if let unknown = object.keys.sorted().first(where: { !["urls", "expiresIn", "key"].contains($0) }) {
            throw .badRequest("unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' (\(shape))")
        }
        guard case .array(let items)? = object["urls"], !items.isEmpty else { throw .badRequest("'urls' must be a non-empty array (\(shape))") }
        guard items.count <= maxURLs else { throw .badRequest("'urls' lists \(items.count) URLs, at most \(maxURLs)") }
        var call = SignaturesCall(urls: [])
        if let given = object["expiresIn"] {
            guard case .number(let seconds) = given, seconds.isFinite, seconds.rounded() == seconds,
                  seconds >= 1, seconds <= Double(maxExpiresInSeconds) else {
                throw .badRequest("'expiresIn' must be a whole number of seconds from 1 to \(maxExpiresInSeconds), got \(given.kindDescription)")
            }
            call.expiresInSeconds = Int(seconds)
        }
        if let given = object["key"] {
            guard case .string(let id) = given, URLSignature.isValidKeyID(id) else { throw .badRequest("'key' must be a signing key's id") }
            call.keyID = id
        }
        for (index, item) in items.enumerated() {
            call.urls.append(try wanted(item, field: "urls[\(index)]"))
        }
        return call
    }

    private static func wanted(_ item: JSONValue, field: String) throws(APIError) -> Wanted {
        guard case .object(let object) = item else { throw .badRequest("'\(field)' must be an object, got \(item.kindDescription)") }
        if let unknown = object.keys.sorted().first(where: { !["kind", "asset", "scale", "format"].contains($0) }) {
            throw .badRequest("unknown key '\(DisplayText.truncated(unknown, maxBytes: 40))' in '\(field)'")
        }
        func text(_ key: String, maxBytes: Int) throws(APIError) -> String {
            guard case .string(let text)? = object[key], (1...maxBytes).contains(text.utf8.count), !text.utf8.contains(0) else {
                throw .badRequest("'\(field).\(key)' must be a string of 1 to \(maxBytes) bytes without NUL")
            }
            return text
        }
        let kind = try text("kind", maxBytes: 256)
        guard !kind.utf8.contains(0x0A) else { throw .badRequest("'\(field).kind' may not hold a line break") }
        let asset = try text("asset", maxBytes: PipelineRequest.maxAssetPathBytes)
        var wanted = Wanted(kind: kind, asset: asset)
        if let given = object["scale"] {
            guard case .number(let scale) = given, scale.isFinite, scale.rounded() == scale, (1...4).contains(scale) else {
                throw .badRequest("'\(field).scale' must be an integer from 1 to 4, got \(given.kindDescription)")
            }
            wanted.scale = Int(scale)
        }
        if let given = object["format"] {
            guard case .string(let format) = given, formats.contains(format) else {
                throw .badRequest("'\(field).format' must be one of \(formats.sorted().joined(separator: ", "))")
            }
            wanted.format = format
        }
        return wanted
    }
}

extension ThumbnailAPI {
    /// A page of the listing; `next` is the last path when the page is full (there may be more).
    /// Written by hand for the same reason as the placeholders' answer: a thousand entries.
    func assetList(_ call: AssetListCall) -> HTTPResponse {
        let page = pipeline.listAssets(prefix: call.prefix, after: call.after, limit: call.limit)
        var body = #"{"assets":["#
        for (index, asset) in page.enumerated() {
            if index > 0 { body += "," }
            body += #"{"path":"# + JSONLines.string(asset.path)
            if let media = asset.media { body += #","media":""# + media.rawValue + "\"" }
            if let placeholder = asset.placeholder {
                body += #","placeholder":{"averageColor":"\#(placeholder.averageColorHex)","thumbhash":"\#(placeholder.thumbHashBase64)"}"#
            }
            body += "}"
        }
        let next = page.count == call.limit ? page.last.map { JSONLines.string($0.path) } ?? "null" : "null"
        body += #"],"next":"# + next + "}\n"
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: Array(body.utf8))
    }

    /// Signs each URL with the named key (else the first); 409 when the daemon has no keys.
    func signatures(_ call: SignaturesCall) -> HTTPResponse {
        guard let key = call.keyID.map({ id in access.keys.first { $0.id == id } }) ?? access.keys.first else {
            if let id = call.keyID, !access.keys.isEmpty {
                return .error(400, "badRequest", "no signing key '\(DisplayText.truncated(id, maxBytes: 64))' in access.signingKeys")
            }
            return .error(409, "noSigningKeys", "this daemon has no access.signingKeys to sign with")
        }
        let expires = call.expiresInSeconds.map { String(access.clock() + UInt64($0)) }
        var urls: [String] = []
        urls.reserveCapacity(call.urls.count)
        for wanted in call.urls {
            let fields = URLSignature.Fields(kind: wanted.kind, assetPath: wanted.asset, scale: wanted.scale.map(String.init),
                                             format: wanted.format, expires: expires)
            guard let url = URLSignature.signedPath(fields, key: key) else {
                return .error(400, "badRequest", "a kind may not hold a line break")
            }
            urls.append(url)
        }
        var answer: [String: Any] = ["urls": urls, "key": key.id]
        answer["expires"] = expires.flatMap { Int($0) } ?? NSNull()
        return .json(200, answer, headers: [("Cache-Control", "no-store")])
    }
}
