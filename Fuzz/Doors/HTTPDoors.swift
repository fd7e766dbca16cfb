import Dispatch
import Foundation
import ThumbAccess
import ThumbImaging
import ThumbPipeline
import ThumbServer

/// The HTTP API without a socket: requests as `HTTPServer` hands them over (path and query
/// still percent-encoded, as C strings; header names lower-cased, last value wins), answered by a `ThumbnailAPI`
/// over a fresh pipeline per input, so an input replays the same way every time.
///
/// Input: requests separated by an empty line, at most `maxRequests`; each is a line
/// `METHOD TARGET` (TARGET = path, optionally `?query`) and then `name: value` header lines.
/// Several requests per input reach what depends on order (a slot's tokens).
enum HTTPDoors {
    static let maxRequests = 8

    static func requests(_ text: String) {
        let blocks = text.components(separatedBy: "\n\n").prefix(maxRequests)
        FuzzServer.withAPI { api in
            for block in blocks {
                guard let request = request(from: block) else { continue }
                answer(request, by: api)
            }
        }
    }

    static func prefetch(body: [UInt8]) {
        FuzzServer.withAPI { api in
            answer(HTTPRequest(method: "POST", path: "/v1/prefetch", headers: ["content-type": "application/json"], body: body), by: api)
        }
    }

    /// The parser on its own (an accepted call is within its bounds), then both forms through the API.
    static func placeholders(body: [UInt8]) {
        if let call = try? PlaceholdersCall.parse(body: body) {
            precondition((1...PlaceholdersCall.maxAssets).contains(call.assets.count), "\(call.assets.count) assets accepted")
            precondition(call.assets.allSatisfy { (1...PipelineRequest.maxAssetPathBytes).contains($0.utf8.count) && !$0.utf8.contains(0) })
        }
        let text = FuzzText.string(body)
        if let call = try? PlaceholdersCall.parse(query: ["assets": text]) {
            precondition((1...PlaceholdersCall.maxAssets).contains(call.assets.count), "\(call.assets.count) assets accepted")
        }
        FuzzServer.withAPI { api in
            answer(HTTPRequest(method: "POST", path: "/v1/placeholders", headers: ["content-type": "application/json"], body: body), by: api)
            answer(HTTPRequest(method: "GET", path: "/v1/placeholders", query: ["assets": cString(text)]), by: api)
        }
    }

    /// The parser itself, then the same body through the API (an empty root: the asset is not
    /// found, after the body was parsed). An accepted focus must be one `FocusRegion` would build
    /// again from its own values, inside the image.
    static func focus(body: [UInt8]) {
        if let focus = try? FocusBody.parse(body) {
            precondition(FocusRegion(x: focus.x, y: focus.y, width: focus.width, height: focus.height) == focus,
                         "accepted a focus its own init refuses: \(focus)")
            precondition(focus.x + focus.width <= 1 && focus.y + focus.height <= 1, "a focus outside the image: \(focus)")
        }
        FuzzServer.withAPI { api in
            answer(HTTPRequest(method: "PUT", path: "/v1/assets/a.jpg/focus", headers: ["content-type": "application/json"], body: body),
                   by: api)
        }
    }

    /// The listing's query (`a=b&c=d`, as sent): an accepted call is within its bounds; then the
    /// same query through the API, as a client and as an anonymous TCP caller (refused by role).
    static func assetList(query text: String) {
        var query: [String: String] = [:]
        for item in text.split(separator: "&", omittingEmptySubsequences: false).prefix(16) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            query[cString(parts[0])] = parts.count > 1 ? cString(parts[1]) : ""
        }
        if let call = try? AssetListCall.parse(query: query) {
            precondition((1...AssetListCall.maxLimit).contains(call.limit), "limit \(call.limit) accepted")
            precondition(call.prefix.utf8.count <= PipelineRequest.maxAssetPathBytes && call.after.utf8.count <= PipelineRequest.maxAssetPathBytes)
            precondition(!call.prefix.utf8.contains(0) && !call.after.utf8.contains(0), "a NUL accepted")
        }
        FuzzServer.withAPI { api in
            answer(HTTPRequest(method: "GET", path: "/v1/assets", query: query), by: api)
            var anonymous = HTTPRequest(method: "GET", path: "/v1/assets", query: query, headers: ["host": "127.0.0.1"])
            anonymous.caller = caller("tcp")
            answer(anonymous, by: api)
        }
    }

    /// The signatures body: an accepted call is within its bounds, and every URL it asks for,
    /// signed with the fuzz key, verifies as the thumbnail door will check it (fields as given).
    static func signatures(body: [UInt8]) {
        if let call = try? SignaturesCall.parse(body: body) {
            precondition((1...SignaturesCall.maxURLs).contains(call.urls.count), "\(call.urls.count) URLs accepted")
            precondition(call.expiresInSeconds.map { (1...SignaturesCall.maxExpiresInSeconds).contains($0) } ?? true)
            let key = URLSignature.Key(id: "k1", secret: [UInt8](repeating: 0x11, count: 32))
            for wanted in call.urls.prefix(32) {
                precondition((1...256).contains(wanted.kind.utf8.count) && (1...PipelineRequest.maxAssetPathBytes).contains(wanted.asset.utf8.count))
                let fields = URLSignature.Fields(kind: wanted.kind, assetPath: wanted.asset, scale: wanted.scale.map(String.init),
                                                 format: wanted.format, expires: "1900000000")
                guard let signature = URLSignature.signature(fields, key: key) else {
                    preconditionFailure("an accepted URL cannot be signed: \(wanted)")
                }
                guard case .success = URLSignature.verify(fields, keyID: "k1", signature: signature, keys: [key], now: 1_800_000_000) else {
                    preconditionFailure("a URL signed here does not verify: \(wanted)")
                }
            }
        }
        FuzzServer.withAPI { api in
            answer(HTTPRequest(method: "POST", path: "/v1/signatures", headers: ["content-type": "application/json"], body: body), by: api)
        }
    }

    /// Every request gets exactly one answer with an HTTP status.
    static func answer(_ request: HTTPRequest, by api: ThumbnailAPI) {
        let answer = Answer()
        api.handle(request) { response in
            answer.status = response.status
            answer.arrived.signal()
        }
        answer.arrived.wait()
        precondition((100..<600).contains(answer.status), "answered with status \(answer.status)")
    }

    /// Written before `arrived` is signalled, read after it is waited for.
    final class Answer: @unchecked Sendable {
        var status = 0
        let arrived = DispatchSemaphore(value: 0)
    }

    static func request(from block: String) -> HTTPRequest? {
        var lines = block.split(separator: "\n", omittingEmptySubsequences: false)[...]
        guard let first = lines.popFirst(), let space = first.firstIndex(of: " ") else { return nil }
        let method = String(first[..<space])
        let target = first[first.index(after: space)...]
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? target
        var query: [String: String] = [:]
        var repeatedName: String?
        if let mark = target.firstIndex(of: "?") {
            for item in target[target.index(after: mark)...].split(separator: "&") {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = cString(parts[0])
                if query.updateValue(parts.count > 1 ? cString(parts[1]) : "", forKey: name) != nil, repeatedName == nil {
                    repeatedName = name
                }
            }
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" })
            headers[cString(line[..<colon]).lowercased()] = cString(value)
        }
        // Who asks (not a header: the transport's fact): `x-fuzz-caller: tcp`, `unix UID GID`, or
        // none (in the process). TCP and socket callers go through the access model's doors
        // (Host, Origin, bearer token, roles, URL signatures).
        let caller = headers.removeValue(forKey: "x-fuzz-caller").map(Self.caller) ?? .inProcess
        var request = HTTPRequest(method: cString(method), path: cString(path), query: query, headers: headers)
        request.repeatedQueryName = repeatedName
        request.caller = caller
        return request
    }

    static func caller(_ text: String) -> HTTPCaller {
        let words = text.split(separator: " ")
        guard words.first == "unix" else { return HTTPCaller(transport: .tcp) }
        let ids = words.dropFirst().map { UInt32($0) ?? 0 }
        return HTTPCaller(transport: .unixSocket, peer: PeerCredentials(uid: ids.first ?? 0, gid: ids.dropFirst().first ?? 0,
                                                                       groups: Array(ids.dropFirst(2).prefix(16))))
    }

    /// libmicrohttpd hands the API C strings, escapes left as they came (the API decodes them
    /// itself and refuses `%00`): only a raw NUL byte ends them.
    static func cString(_ text: some StringProtocol) -> String {
        String(text.prefix { $0 != "\0" })
    }
}
