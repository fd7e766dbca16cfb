import Foundation
import Synchronization
package import ThumbAccess
import ThumbImaging
#if canImport(Glibc)
import Glibc
#endif

/// The access model, resolved for this host: user and group names made ids, token and key files
/// read. Decides who a request speaks for (`principal`), refuses what a browser must not be able
/// to send (`screen`), and what the principal's role does not cover (`authorize`).
package final class AccessControl: Sendable {
    let settings: AccessSettings
    let tokens: [(name: String, role: Role, sha256: [UInt8])]
    let keys: [URLSignature.Key]
    /// What `keys` accepted lately: a signed thumbnail's every hit after its first costs a
    /// comparison of its fields, not an HMAC.
    let verifiedSignatures = VerifiedSignatures()
    let userRoles: [UInt32: Role]
    let groupRoles: [UInt32: Role]
    let operatorGroupID: UInt32?
    let clock: @Sendable () -> UInt64
    let refusals = AccessRefusals()

    /// `names`: user and group lookups (getpwnam, getgrnam by default); a name the host does not
    /// know is left out and reported in `unknownNames`.
    package init(settings: AccessSettings, environment: [String: String] = ProcessInfo.processInfo.environment,
                 clock: @escaping @Sendable () -> UInt64 = { UInt64(max(0, time(nil))) }) throws(SecretFileError) {
        self.settings = settings
        let secrets = try settings.resolvedSecrets(environment: environment)
        tokens = secrets.tokens.map { ($0.0.name, $0.0.role, $0.1) }
        keys = secrets.keys
        var users: [UInt32: Role] = [:]
        var groups: [UInt32: Role] = [:]
        var unknown: [String] = []
        for (name, role) in settings.users {
            if let uid = Self.userID(name) { users[uid] = role } else { unknown.append("user \(name)") }
        }
        for (name, role) in settings.groups {
            if let gid = Self.groupID(name) { groups[gid] = role } else { unknown.append("group \(name)") }
        }
        operatorGroupID = settings.operatorGroup.flatMap { name in
            let gid = Self.groupID(name)
            if gid == nil { unknown.append("group \(name)") }
            return gid
        }
        userRoles = users
        groupRoles = groups
        unknownNames = unknown.sorted()
        self.clock = clock
    }

    /// Users and groups of the config this host does not have (logged at start).
    package let unknownNames: [String]

    static func userID(_ name: String) -> UInt32? { getpwnam(name).map { $0.pointee.pw_uid } }
    static func groupID(_ name: String) -> UInt32? { getgrnam(name).map { $0.pointee.gr_gid } }

    // MARK: Who

    /// The principal of a request: a valid bearer token's, else the socket peer's, else
    /// anonymous. A bearer token that matches none is refused (401), not taken as anonymous: a
    /// caller with a typo should hear about it.
    package func principal(of request: HTTPRequest) -> Result<Principal, AccessRefusal> {
        if let authorization = request.headers["authorization"] {
            guard Self.isBasic(authorization) else { return tokenPrincipal(authorization, browser: false) }
            // A browser sends the Basic credentials it keeps with every request to the origin,
            // an <img> of another site's page too: they speak only for the console's own requests
            // (`Sec-Fetch-Site`, which pages cannot set); anything else is as if they were absent.
            let site = request.headers["sec-fetch-site"]
            if site == "same-origin" || site == "none" { return tokenPrincipal(authorization, browser: true) }
        }
        switch request.caller.transport {
        case .inProcess: return .success(.inProcess)
        case .tcp: return .success(Principal(key: Principal.anonymousKey, role: .public))
        case .unixSocket:
            guard let peer = request.caller.peer else { return .success(Principal(key: Principal.anonymousKey, role: .public)) }
            return .success(Principal(key: "uid:\(peer.uid)", role: role(of: peer)))
        }
    }

    func role(of peer: PeerCredentials) -> Role {
        if let role = userRoles[peer.uid] { return role }
        if peer.uid == 0 { return .operator }
        let groups = [peer.gid] + peer.groups
        if let operatorGroupID, groups.contains(operatorGroupID) { return .operator }
        let byGroup = groups.compactMap { groupRoles[$0] }.max()
        return byGroup ?? settings.socketRole
    }

    private func tokenPrincipal(_ authorization: String, browser: Bool) -> Result<Principal, AccessRefusal> {
        let challenge = browser ? Principal.browserChallenge : [("WWW-Authenticate", "Bearer realm=\"thumbd\"")]
        guard let token = Self.token(authorization: Array(authorization.utf8)) else {
            return .failure(AccessRefusal(status: 401, code: "unauthorized", message: "Authorization must be 'Bearer TOKEN' (or Basic with the token as the password)",
                                          reason: "token", headers: challenge))
        }
        let hash = Digest.sha256(token)
        // Every configured hash is compared, each in constant time: neither the time nor the
        // answer tells which token came close.
        var found: (name: String, role: Role)?
        for token in tokens where Digest.constantTimeEqual(token.sha256, hash) { found = (token.name, token.role) }
        guard let found else {
            return .failure(AccessRefusal(status: 401, code: "unauthorized", message: "the bearer token is not one this daemon knows",
                                          reason: "token", headers: challenge))
        }
        return .success(Principal(key: "token:\(found.name)", role: found.role, signedInByBrowser: browser))
    }

    static func isBasic(_ authorization: String) -> Bool {
        authorization.utf8.count > 6 && zip(authorization.utf8, "basic ".utf8).allSatisfy { ($0 | 0x20) == $1 || $0 == $1 }
    }

    /// The token of `Bearer TOKEN`, or the password of `Basic base64(name:password)` (what a
    /// browser sends for the console's prompt; the name is not looked at). nil for anything else.
    static func token(authorization utf8: [UInt8]) -> [UInt8]? {
        guard utf8.count <= 4096 else { return nil }
        func scheme(_ name: String) -> Bool {
            let scheme = Array(name.utf8)
            return utf8.count > scheme.count && zip(utf8, scheme).allSatisfy { ($0 | 0x20) == $1 || $0 == $1 }
        }
        if scheme("bearer ") { return Array(utf8.dropFirst(7)) }
        guard scheme("basic "), let decoded = Data(base64Encoded: String(decoding: utf8.dropFirst(6), as: UTF8.self)).map(Array.init),
              let colon = decoded.firstIndex(of: UInt8(ascii: ":")), colon + 1 < decoded.count else { return nil }
        return Array(decoded[(colon + 1)...])
    }

    // MARK: What a browser must not be able to send

    /// Refusals that do not depend on the route's role: a TCP Host that is not this listener
    /// (DNS rebinding), an Origin outside `allowedOrigins`, a body that is not JSON (a CORS
    /// "simple request" needs no preflight).
    package func screen(_ request: HTTPRequest) -> AccessRefusal? {
        if request.caller.transport == .tcp, !isOwnHost(request.headers["host"]) {
            return AccessRefusal(status: 421, code: "misdirectedRequest",
                                 message: "Host must name this listener (its loopback address, localhost, or access.hosts)", reason: "host")
        }
        if let origin = request.headers["origin"], !isAllowed(origin: origin, host: request.headers["host"]) {
            return AccessRefusal(status: 403, code: "originNotAllowed",
                                 message: "requests from pages of \(DisplayText.truncated(origin, maxBytes: 100)) are not allowed (access.allowedOrigins)",
                                 reason: "origin")
        }
        if (request.method == "POST" || request.method == "PUT"), !request.body.isEmpty, !Self.isJSON(request.headers["content-type"]) {
            return AccessRefusal(status: 415, code: "unsupportedMediaType", message: "a request body must be Content-Type: application/json",
                                 reason: "contentType")
        }
        return nil
    }

    /// `Host` names a loopback address, `localhost`, or a configured name (any port: a page
    /// that rebinds its name reaches the listener's port under its own name, which is what this
    /// refuses). Asked on every TCP request, hits included: read in place, nothing allocated
    /// unless `access.hosts` is to be searched.
    func isOwnHost(_ header: String?) -> Bool {
        guard var header, !header.isEmpty, header.utf8.count <= 300 else { return false }
        return header.withUTF8 { bytes in
            if bytes[0] == UInt8(ascii: "[") {
                guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
                return Self.isPort(bytes[(close + 1)...]) && Self.equalsIgnoringCase(bytes[1..<close], "::1")
            }
            let colon = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            // What follows the name is a port or nothing: `localhost:evil.com` names no listener.
            guard Self.isPort(bytes[colon...]) else { return false }
            let host = bytes[..<colon]
            if Self.equalsIgnoringCase(host, "localhost") || Self.isLoopbackIPv4(host) { return true }
            guard !settings.hosts.isEmpty else { return false }
            return settings.hosts.contains(String(decoding: host, as: UTF8.self).lowercased())
        }
    }

    static func equalsIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        return zip(bytes, UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)).allSatisfy { byte, expected in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == expected : byte == expected
        }
    }

    /// The end of a Host after its name: nothing, or `:` and one to five digits.
    static func isPort(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let first = bytes.first else { return true }
        let digits = bytes.dropFirst()
        return first == UInt8(ascii: ":") && (1...5).contains(digits.count)
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// 127.x.y.z: four parts of one to three digits, each below 256.
    static func isLoopbackIPv4(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var parts = 0, digits = 0, value = 0, first = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, value < 256 else { return false }
                if parts == 0 { first = value }
                parts += 1
                digits = 0
                value = 0
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                digits += 1
                guard digits <= 3 else { return false }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0 && value < 256 && first == 127
    }

    /// An origin listed in `allowedOrigins`, or the page's own (`Origin` naming the `Host` the
    /// request went to: a page served through the same proxy).
    func isAllowed(origin: String, host: String?) -> Bool {
        let lowered = origin.lowercased()
        if settings.allowedOrigins.contains(lowered) { return true }
        guard let host = host?.lowercased(), !host.isEmpty else { return false }
        return lowered == "http://" + host || lowered == "https://" + host
    }

    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let media = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return media == "application/json"
    }

    // MARK: What the role covers

    /// The role a parsed call needs, and for thumbnails the signature rule of the listener.
    package func authorize(_ call: APIRequest, principal: Principal, caller: HTTPCaller) -> AccessRefusal? {
        let has = principal.role
        func need(_ role: Role, _ what: String) -> AccessRefusal? { has >= role ? nil : .needs(role, what, has: has) }
        switch call {
        case .thumbnail(let thumbnail):
            if thumbnail.slot != nil, !settings.publicSlots, let refusal = need(.client, "a slot (client, slot, token)") { return refusal }
            if thumbnail.answersWithPath, let refusal = need(.client, "a JSON answer (as=path, Accept: application/json)") { return refusal }
            guard has == .public else { return nil }
            return signatureRefusal(thumbnail, rule: rule(for: caller))
        case .releaseSlot: return settings.publicSlots ? nil : need(.client, "releasing a slot")
        case .prefetch, .cancelPrefetch: return need(.client, "prefetch")
        case .focus(let focus): return focus.action == .get ? need(.client, "reading a focus point") : need(.operator, "changing a focus point")
        case .metrics: return need(.operator, "/metrics")
        case .cacheStatistics: return need(.operator, "cache statistics")
        case .purgeCache: return need(.operator, "a cache purge")
        case .listAssets: return need(.client, "the asset listing")
        case .signatures: return need(.client, "signing URLs")
        case .webFile(let file):
            guard file.path != WebFile.cellsPath, has < .operator else { return nil }
            // An anonymous browser on TCP is asked for credentials (Basic, the token as its
            // password), so that an operator can open the console with nothing but a browser.
            if (caller.transport == .tcp && principal.key == Principal.anonymousKey) || principal.signedInByBrowser {
                return AccessRefusal(status: 401, code: "unauthorized", message: "the console needs the operator role: sign in with an operator's token",
                                     reason: "role", headers: Principal.browserChallenge)
            }
            return .needs(.operator, "the console", has: has)
        case .placeholders, .kinds, .health, .ready, .openAPI: return nil
        }
    }

    func rule(for caller: HTTPCaller) -> AccessSettings.SignatureRule {
        switch caller.transport {
        case .unixSocket: settings.effectiveSocketSignatures
        case .tcp: settings.effectiveTCPSignatures
        case .inProcess: .off
        }
    }

    /// A `public` caller's thumbnail: a valid signature where the listener asks for one (and
    /// wherever one is given, unless signatures are off); an inline spec only when signed.
    func signatureRefusal(_ call: ThumbnailCall, rule: AccessSettings.SignatureRule) -> AccessRefusal? {
        let given = call.signature != nil || call.signatureKey != nil
        if rule == .off || (rule == .optional && !given) {
            return call.isInlineSpec ? .needs(.client, "an inline spec (unsigned)", has: .public) : nil
        }
        switch URLSignature.verify(call.signed, keyID: call.signatureKey, signature: call.signature, keys: keys, now: clock(),
                                   verified: verifiedSignatures) {
        case .success: return nil
        case .failure(let refusal): return AccessRefusal(status: 403, code: refusal.code, message: refusal.message, reason: "signature")
        }
    }
}
