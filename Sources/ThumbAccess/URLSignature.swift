import Synchronization

/// Signed thumbnail URLs: the imgproxy model in a format of our own, documented in docs/access.md.
///
/// A URL `/v1/thumbnails/{kind}/{asset}?scale=&format=&expires=&key=&sig=` is signed by
/// `sig = base64url(HMAC-SHA256(secret of key, canonical))`, without padding, where `canonical`
/// is the UTF-8 of these lines joined by "\n" (values percent-decoded; an absent one is empty):
///
///     thumbd-url-1
///     {key id}
///     {expires: Unix seconds, or empty}
///     {kind or inline spec, as in the path}
///     {scale}
///     {format}
///     {asset path}
///
/// The asset path comes last: it is the only field that may hold a line break, so no other
/// split of the same text makes another request. Everything that chooses the picture is in it
/// (an inline spec carries its crop, mask and mode); what only says how to wait or which cell
/// asks (`wait`, `priority`, `as`, `client`, `slot`, `token`) is not, so a page can move its
/// cells' tokens on a URL its back end signed once.
package enum URLSignature {
    package static let version = "thumbd-url-1"
    /// Key ids: 1 to 64 of [A-Za-z0-9_-], so that they stay one line and one URL word.
    package static let maxKeyIDBytes = 64
    /// A secret shorter than this is refused in the config: HMAC-SHA256's own block of entropy.
    package static let minimumSecretBytes = 32

    package struct Key: Sendable, Equatable {
        package let id: String
        package let secret: [UInt8]
        /// The secret set up for HMAC once, not per signed request.
        let mac: HMACSHA256Key

        package init(id: String, secret: [UInt8]) {
            self.id = id
            self.secret = secret
            mac = HMACSHA256Key(secret: secret)
        }

        package static func == (left: Key, right: Key) -> Bool { left.id == right.id && left.secret == right.secret }
    }

    /// The fields of a thumbnail URL that a signature covers, percent-decoded.
    package struct Fields: Sendable, Equatable {
        package var kind: String
        package var assetPath: String
        package var scale: String?
        package var format: String?
        package var expires: String?

        package init(kind: String, assetPath: String, scale: String? = nil, format: String? = nil, expires: String? = nil) {
            self.kind = kind
            self.assetPath = assetPath
            self.scale = scale
            self.format = format
            self.expires = expires
        }

        /// Byte for byte: Swift's `String ==` holds canonically equivalent spellings equal (NFC
        /// `café.jpg` and NFD `café.jpg`, `K` and the Kelvin sign), and on Linux those are two
        /// files; a signature for one must never verify the other.
        package static func == (left: Fields, right: Fields) -> Bool {
            sameBytes(left.kind, right.kind) && sameBytes(left.assetPath, right.assetPath) && sameBytes(left.scale, right.scale)
                && sameBytes(left.format, right.format) && sameBytes(left.expires, right.expires)
        }
    }

    /// Whether two texts are the same UTF-8 bytes (both nil counts as the same).
    package static func sameBytes(_ left: String?, _ right: String?) -> Bool {
        switch (left, right) {
        case (nil, nil): true
        case (let left?, let right?): left.utf8.elementsEqual(right.utf8)
        default: false
        }
    }

    /// Why a signed URL was not accepted; `code` is the API's error code and metrics' reason.
    package enum Refusal: Error, Equatable, Sendable {
        case missing, malformed(String), unknownKey, expired, mismatch

        package var code: String {
            switch self {
            case .missing: "signatureRequired"
            case .malformed: "badSignature"
            case .unknownKey: "unknownKey"
            case .expired: "signatureExpired"
            case .mismatch: "badSignature"
            }
        }

        package var message: String {
            switch self {
            case .missing: "this listener serves unsigned URLs to operators and clients only: sign the URL (key, sig, optional expires)"
            case .malformed(let why): "the signature parameters are malformed: \(why)"
            case .unknownKey: "the URL is signed with a key this daemon does not hold"
            case .expired: "the signed URL has expired"
            case .mismatch: "the signature does not match the URL (kind, asset, scale, format and expires are signed)"
            }
        }
    }

    package static func isValidKeyID(_ id: String) -> Bool {
        let utf8 = id.utf8
        return (1...maxKeyIDBytes).contains(utf8.count) && utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// The canonical text; nil when a field other than the asset path holds a line break.
    /// Built byte by byte into one buffer, without an array of its lines: every signed hit builds it.
    package static func canonical(_ fields: Fields, keyID: String) -> [UInt8]? {
        let newline = UInt8(ascii: "\n")
        var message: [UInt8] = []
        message.reserveCapacity(version.utf8.count + keyID.utf8.count + (fields.expires?.utf8.count ?? 0) + fields.kind.utf8.count
                                + (fields.scale?.utf8.count ?? 0) + (fields.format?.utf8.count ?? 0) + fields.assetPath.utf8.count + 6)
        func line(_ text: String?) -> Bool {
            guard let text else {
                message.append(newline)
                return true
            }
            let start = message.count
            message.append(contentsOf: text.utf8)
            guard !message[start...].contains(newline) else { return false }
            message.append(newline)
            return true
        }
        guard line(version), line(keyID), line(fields.expires), line(fields.kind), line(fields.scale), line(fields.format) else { return nil }
        message.append(contentsOf: fields.assetPath.utf8)
        return message
    }

    /// The `sig` value for `fields` under `key`.
    package static func signature(_ fields: Fields, key: Key) -> String? {
        canonical(fields, keyID: key.id).map { Base64URL.encode(key.mac.authenticate($0)) }
    }

    /// The signed URL's path and query: `/v1/thumbnails/{kind}/{asset}?[scale=&][format=&][expires=&]key=&sig=`.
    /// nil when a field cannot be signed (a line break where none may be).
    package static func signedPath(_ fields: Fields, key: Key) -> String? {
        signature(fields, key: key).map { signedPath(fields, key: key, signature: $0) }
    }

    package static func signedPath(_ fields: Fields, key: Key, signature: String) -> String {
        var query: [(String, String)] = []
        if let scale = fields.scale { query.append(("scale", scale)) }
        if let format = fields.format { query.append(("format", format)) }
        if let expires = fields.expires { query.append(("expires", expires)) }
        query += [("key", key.id), ("sig", signature)]
        let path = "/v1/thumbnails/" + escaped(fields.kind, keepSlash: false) + "/" + escaped(fields.assetPath, keepSlash: true)
        return path + "?" + query.map { "\($0.0)=\(escaped($0.1, keepSlash: false))" }.joined(separator: "&")
    }

    /// RFC 3986 unreserved bytes as they are, every other byte %XX (and `/` too unless kept).
    static func escaped(_ text: String, keepSlash: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Checks `sig` and `key` (as sent, decoded) against the keys held, at `now` (Unix seconds).
    /// The signature is compared in constant time: the time taken does not tell how much of a
    /// forged one matched.
    /// `verified`: signatures this key set accepted before; a URL signed once is then checked by
    /// comparing its fields, not by an HMAC (every hit on a signed thumbnail asks again).
    package static func verify(_ fields: Fields, keyID: String?, signature: String?, keys: [Key], now: UInt64,
                               verified: VerifiedSignatures? = nil) -> Result<Void, Refusal> {
        guard let signature else { return .failure(keyID == nil && fields.expires == nil ? .missing : .malformed("sig is missing")) }
        guard let keyID else { return .failure(.malformed("key is missing")) }
        guard isValidKeyID(keyID) else { return .failure(.malformed("key must be 1 to \(maxKeyIDBytes) of A-Z a-z 0-9 _ -")) }
        if let expires = fields.expires {
            guard !expires.isEmpty, expires.utf8.count <= 12, expires.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let seconds = UInt64(expires) else {
                return .failure(.malformed("expires must be Unix seconds (digits)"))
            }
            guard seconds >= now else { return .failure(.expired) }
        }
        if let verified, verified.contains(signature, fields: fields, keyID: keyID) { return .success(()) }
        guard let message = canonical(fields, keyID: keyID) else { return .failure(.malformed("a signed field holds a line break")) }
        guard let key = keys.first(where: { $0.id == keyID }) else { return .failure(.unknownKey) }
        // The MAC's 43 characters, decoded, against the MAC's 32 bytes: a text that is not
        // exactly one encoding of 32 bytes (a padding `=`, other bits in the last character)
        // matches nothing, as when the expected MAC was encoded and the texts compared.
        guard let presented = Base64URL.decode(signature), presented.count == Digest.sha256Bytes else { return .failure(.mismatch) }
        guard Digest.constantTimeEqual(key.mac.authenticate(message), presented) else { return .failure(.mismatch) }
        verified?.insert(signature, fields: fields, keyID: keyID)
        return .success(())
    }
}

/// Signatures a key set accepted, by their text, with what they signed: a URL's fields and key
/// id equal to those of an accepted signature are accepted again without an HMAC (its expiry is
/// checked every time, before this is asked). Holds for the life of one key set: a new set of
/// keys starts a new one. At most `capacity` entries; full, it starts over (a flood of new signed
/// URLs costs the HMAC each, as without it, and no memory beyond the bound).
package final class VerifiedSignatures: Sendable {
    private struct Signed: Sendable {
        var signature: String
        var fields: URLSignature.Fields
        var keyID: String
    }

    package static let defaultCapacity = 4096
    private let capacity: Int
    private let accepted: Mutex<[String: Signed]>

    package init(capacity: Int = VerifiedSignatures.defaultCapacity) {
        self.capacity = max(1, capacity)
        accepted = Mutex([:])
    }

    package var count: Int { accepted.withLock { $0.count } }

    func contains(_ signature: String, fields: URLSignature.Fields, keyID: String) -> Bool {
        accepted.withLock { accepted in
            // Found by a `String` key (equal up to Unicode equivalence), then held to its bytes.
            guard let signed = accepted[signature] else { return false }
            return URLSignature.sameBytes(signed.signature, signature) && URLSignature.sameBytes(signed.keyID, keyID) && signed.fields == fields
        }
    }

    /// Fields of more than this many bytes are not kept (an asset path may be 4 KiB): the bound
    /// on memory is `capacity` times this.
    static let maxKeptFieldBytes = 1024

    func insert(_ signature: String, fields: URLSignature.Fields, keyID: String) {
        let bytes = fields.kind.utf8.count + fields.assetPath.utf8.count + (fields.scale?.utf8.count ?? 0)
            + (fields.format?.utf8.count ?? 0) + (fields.expires?.utf8.count ?? 0)
        guard bytes <= Self.maxKeptFieldBytes else { return }
        accepted.withLock { accepted in
            if accepted.count >= capacity { accepted.removeAll(keepingCapacity: true) }
            accepted[signature] = Signed(signature: signature, fields: fields, keyID: keyID)
        }
    }
}
