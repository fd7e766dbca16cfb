package import ThumbAccess
package import ThumbImaging
package import ThumbPipeline

/// `GET /v1/thumbnails/{kind}/{asset path}?scale&client&slot&token&priority&wait&as&format`,
/// parsed: every value within its range, the format negotiated with `Accept`.
package struct ThumbnailCall: Sendable {
    package var assetPath: String
    package var kind: SlotKind
    package var scale: Int
    package var slot: SlotID?
    package var token: UInt64?
    package var priority: Priority
    /// How long the request waits for a render, already capped at the server's maximum.
    package var waitMilliseconds: Int
    /// `as=path` or `Accept: application/json`: answer with the cached file's path, not its bytes.
    package var answersWithPath: Bool
    package var ifNoneMatch: String?
    /// `format=`, or what `Accept` chose among the kind's formats, or the kind's preferred one.
    package var format: EncoderSettings.Format
    /// The answer depends on `Accept` (answered with `Vary: Accept`): its format was negotiated,
    /// or the URL has no `as=path` (`Accept: application/json` would answer JSON).
    package var variesWithAccept: Bool
    /// What a URL signature covers, as sent (decoded), with the signature's own parameters.
    package var signed: URLSignature.Fields
    package var signatureKey: String?
    package var signature: String?
    /// The path names an inline spec (`64x64,fill`), not a configured kind.
    package var isInlineSpec: Bool { signed.kind.utf8.first.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false }

    /// The caller (`Principal.key`): its slots and its share of renders.
    package var owner: String?

    /// A miss with `wait=0` answers with the placeholder, and JSON answers carry it: such a
    /// client reads placeholders, so its render computes one at any cost.
    package var pipelineRequest: PipelineRequest {
        var request = PipelineRequest(assetPath: assetPath, kind: kind, scale: scale, priority: priority, slot: slot, token: token,
                                      format: format)
        request.wantsPlaceholder = waitMilliseconds == 0 || answersWithPath
        request.owner = owner
        return request
    }

    /// The query parameters a thumbnail URL may carry.
    static let parameterNames: Set<String> = ["scale", "format", "client", "slot", "token", "priority", "wait", "as",
                                              "expires", "key", "sig"]

    static func parse(_ request: HTTPRequest, context: ParsingContext, maxWaitMilliseconds: Int) throws(APIError) -> ThumbnailCall {
        // By bytes: the route's prefix is ASCII, and so is the slash that ends the kind.
        let path = request.path
        let utf8 = path.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: "/v1/thumbnails/".utf8.count, limitedBy: utf8.endIndex) ?? utf8.endIndex
        guard let slash = utf8[start...].firstIndex(of: UInt8(ascii: "/")) else {
            throw .badRequest("expected /v1/thumbnails/{kind}/{asset path}")
        }
        let kindText = try PercentDecoding.decode(path[start..<slash], field: "the kind")
        let assetPath = try PercentDecoding.decode(path[utf8.index(after: slash)...], field: "the asset path")
        guard !assetPath.isEmpty else { throw .badRequest("no asset path") }
        guard assetPath.utf8.count <= PipelineRequest.maxAssetPathBytes else {
            throw .badRequest("an asset path is at most \(PipelineRequest.maxAssetPathBytes) bytes, this one \(assetPath.utf8.count)")
        }
        let query = try PercentDecoding.decode(query: request.query)
        // Every name is one of these, exactly: another (a misspelling, `SCALE`) would be ignored
        // here while a cache in front keys by it (nginx's `$arg_…` ignore case).
        if let unknown = query.keys.first(where: { !Self.parameterNames.contains($0) }) {
            throw .badQuery("unknown parameter '\(DisplayText.truncated(unknown, maxBytes: 40))' (expected \(Self.parameterNames.sorted().joined(separator: ", ")))")
        }
        var scale: DisplayScale?
        if let text = query["scale"] {
            guard let value = DisplayScale(text: text) else {
                throw .badQuery("scale must be \(DisplayScale.rangeDescription), got '\(DisplayText.truncated(text, maxBytes: 40))'")
            }
            scale = value
        }
        let selection: SlotSelection
        do {
            selection = try context.selection(kindText, scale: scale)
        } catch {
            throw APIError(400, "badKind", error.description)
        }
        var slot: SlotID?
        switch (query["client"], query["slot"]) {
        case (let client?, let id?) where !client.isEmpty && !id.isEmpty: slot = try slotID(client: client, slot: id)
        case (nil, nil): slot = nil
        default: throw .badQuery("client and slot go together")
        }
        var token: UInt64?
        if let text = query["token"] {
            guard slot != nil, let value = wholeNumber(text), SlotToken.range.contains(value) else {
                throw .badQuery("token must be a whole number from \(SlotToken.range.lowerBound) to \(SlotToken.range.upperBound), "
                                + "with client and slot")
            }
            token = value
        }
        var priority = Priority.visible
        if let text = query["priority"] {
            switch text {
            case "visible": priority = .visible
            case "prefetch": priority = .prefetch
            default: throw .badQuery("priority must be visible or prefetch")
            }
        }
        var wait = maxWaitMilliseconds
        if let text = query["wait"] {
            guard let value = wholeNumber(text) else {
                throw .badQuery("wait must be a whole number of milliseconds from 0 (longer waits are cut to \(maxWaitMilliseconds))")
            }
            wait = value < UInt64(maxWaitMilliseconds) ? Int(value) : maxWaitMilliseconds
        }
        var asked: EncoderSettings.Format?
        if let text = query["format"] {
            guard let value = EncoderSettings.Format(rawValue: text) else {
                throw .badQuery("format must be one of \(EncoderSettings.Format.allCases.map(\.rawValue).joined(separator: ", ")), "
                                + "got '\(DisplayText.truncated(text, maxBytes: 40))'")
            }
            asked = value
        }
        let scaleChosen = selection.scale ?? selection.kind.scales.first ?? 1
        let chosen: (format: EncoderSettings.Format, variesWithAccept: Bool)
        do {
            chosen = try context.choice(for: selection.kind, scale: scaleChosen, asked: asked, accept: request.headers["accept"])
        } catch {
            throw APIError(400, "formatNotAllowed", error.reason)
        }
        let pathAsked = query["as"] == "path"
        return ThumbnailCall(assetPath: assetPath, kind: selection.kind, scale: scaleChosen,
                             slot: slot, token: token, priority: priority, waitMilliseconds: wait,
                             answersWithPath: pathAsked || (request.headers["accept"].map { Self.names($0, "application/json") } ?? false),
                             ifNoneMatch: request.headers["if-none-match"], format: chosen.format,
                             // Without `as=path` the URL answers JSON to `Accept: application/json`:
                             // the image varies with Accept even when its format is fixed.
                             variesWithAccept: chosen.variesWithAccept || !pathAsked,
                             signed: URLSignature.Fields(kind: kindText, assetPath: assetPath, scale: query["scale"], format: query["format"],
                                                         expires: query["expires"]),
                             signatureKey: query["key"], signature: query["sig"])
    }

    /// A client name and slot id, already decoded (so UTF-8 without NUL): each 1 to
    /// `SlotID.maxPartBytes` bytes.
    static func slotID(client: String, slot: String) throws(APIError) -> SlotID {
        for (field, value) in [("client", client), ("slot", slot)] {
            guard (1...SlotID.maxPartBytes).contains(value.utf8.count) else {
                throw .badQuery("\(field) must be 1 to \(SlotID.maxPartBytes) bytes, this one is \(value.utf8.count)")
            }
        }
        return SlotID(client: client, slot: slot)
    }

    /// Whether `text` holds `part` (bytes compared as they are, as `contains` on a string did for
    /// an ASCII `part`), without Foundation's bridged search.
    static func names(_ text: String, _ part: StaticString) -> Bool {
        let needle = UnsafeBufferPointer(start: part.utf8Start, count: part.utf8CodeUnitCount)
        guard let first = needle.first else { return true }
        let haystack = Array(text.utf8)
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == first {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// Decimal digits only (no sign, no spaces); nil for anything else. Past 19 digits the value
    /// saturates at `UInt64.max`, so a long run of digits is "too large", not "not a number".
    static func wholeNumber(_ text: String) -> UInt64? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt64(text) ?? .max
    }
}
