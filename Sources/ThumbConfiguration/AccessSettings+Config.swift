import ThumbAccess

extension ThumbConfig {
    /// `access`: who may do what (`AccessSettings`). Every name, role and secret checked here;
    /// files named are read when the daemon starts.
    static func parseAccess(_ access: JSONFields, folder: String) throws(ConfigError) -> AccessSettings {
        try access.allowOnly(["socketRole", "operatorGroup", "users", "groups", "tokens", "signingKeys", "signatures",
                              "hosts", "allowedOrigins", "fairShare", "publicSlots"])
        var settings = AccessSettings()
        func role(_ fields: JSONFields, _ key: String) throws(ConfigError) -> Role? {
            guard let name = try fields.string(key) else { return nil }
            guard let role = Role(name: name) else { throw fields.fail(key, "must be public, client or operator") }
            return role
        }
        func names(_ key: String) throws(ConfigError) -> [String: Role] {
            guard let map = try access.fields(key) else { return [:] }
            var roles: [String: Role] = [:]
            for name in map.object.keys.sorted() {
                guard (1...64).contains(name.utf8.count) else { throw map.fail(name, "a user or group name is 1 to 64 bytes") }
                roles[name] = try role(map, name)
            }
            return roles
        }
        if let socketRole = try role(access, "socketRole") { settings.socketRole = socketRole }
        if let publicSlots = try access.bool("publicSlots") { settings.publicSlots = publicSlots }
        if let group = try access.string("operatorGroup") {
            guard (1...64).contains(group.utf8.count) else { throw access.fail("operatorGroup", "a group name is 1 to 64 bytes") }
            settings.operatorGroup = group
        }
        settings.users = try names("users")
        settings.groups = try names("groups")
        for (index, item) in (try access.array("tokens") ?? []).enumerated() {
            let token = try JSONFields(item, path: access.keyPath("tokens[\(index)]"), file: access.file)
            try token.allowOnly(["name", "role", "sha256", "file"])
            guard let name = try token.string("name"), (1...64).contains(name.utf8.count), URLSignature.isValidKeyID(name) else {
                throw token.fail("name", "must be 1 to 64 of A-Z a-z 0-9 _ - (it names the principal in logs and metrics)")
            }
            guard let tokenRole = try role(token, "role") else { throw token.fail("role", "is required: public, client or operator") }
            guard !settings.tokens.contains(where: { $0.name == name }) else { throw token.fail("name", "'\(name)' is given twice") }
            settings.tokens.append(.init(name: name, role: tokenRole,
                                         sha256: try secret(token, inline: "sha256", exactBytes: Digest.sha256Bytes, folder: folder)))
        }
        for (index, item) in (try access.array("signingKeys") ?? []).enumerated() {
            let key = try JSONFields(item, path: access.keyPath("signingKeys[\(index)]"), file: access.file)
            try key.allowOnly(["id", "secret", "file"])
            guard let id = try key.string("id"), URLSignature.isValidKeyID(id) else {
                throw key.fail("id", "must be 1 to \(URLSignature.maxKeyIDBytes) of A-Z a-z 0-9 _ -")
            }
            guard !settings.signingKeys.contains(where: { $0.id == id }) else { throw key.fail("id", "'\(id)' is given twice") }
            settings.signingKeys.append(.init(id: id, secret: try secret(key, inline: "secret", minimumBytes: URLSignature.minimumSecretBytes, folder: folder)))
        }
        if let signatures = access.object["signatures"] {
            func rule(_ fields: JSONFields, _ key: String) throws(ConfigError) -> AccessSettings.SignatureRule? {
                guard let text = try fields.string(key) else { return nil }
                guard let rule = AccessSettings.SignatureRule(rawValue: text) else { throw fields.fail(key, "must be required, optional or off") }
                return rule
            }
            if case .string = signatures {
                let both = try rule(access, "signatures")
                (settings.socketSignatures, settings.tcpSignatures) = (both, both)
            } else if let perListener = try access.fields("signatures") {
                try perListener.allowOnly(["socket", "tcp"])
                settings.socketSignatures = try rule(perListener, "socket")
                settings.tcpSignatures = try rule(perListener, "tcp")
            }
            let needsKeys = [settings.socketSignatures, settings.tcpSignatures].contains { $0 == .required || $0 == .optional }
            if needsKeys && settings.signingKeys.isEmpty { throw access.fail("signatures", "signatures need at least one of signingKeys") }
        }
        for (index, item) in (try access.array("hosts") ?? []).enumerated() {
            guard case .string(let host) = item, (1...253).contains(host.utf8.count),
                  host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") }) else {
                throw access.fail("hosts[\(index)]", "must be a host name without port (1 to 253 printable ASCII bytes)")
            }
            settings.hosts.append(host.lowercased())
        }
        for (index, item) in (try access.array("allowedOrigins") ?? []).enumerated() {
            guard case .string(let origin) = item, (1...512).contains(origin.utf8.count),
                  origin.hasPrefix("http://") || origin.hasPrefix("https://"), !origin.dropFirst(8).contains("/") else {
                throw access.fail("allowedOrigins[\(index)]", "must be an origin: scheme://host[:port], e.g. https://app.example")
            }
            settings.allowedOrigins.append(origin.lowercased())
        }
        if let share = try access.fields("fairShare") {
            try share.allowOnly(["maxQueuedRenders", "rendersPerSecond", "burstRenders", "maxRunningRenders"])
            if let value = try share.integer("maxQueuedRenders", in: 1...1_000_000) { settings.fairShare.maxQueuedRenders = value }
            if let value = try share.number("rendersPerSecond", in: 0.01...1_000_000, unit: "renders per second") {
                settings.fairShare.rendersPerSecond = value
            }
            if let value = try share.integer("burstRenders", in: 1...1_000_000) { settings.fairShare.burstRenders = value }
            if let value = try share.integer("maxRunningRenders", in: 1...1024) { settings.fairShare.maxRunningRenders = value }
        }
        return settings
    }

    /// A secret given inline as hex (`inline`) or as a `file`: exactly one of the two.
    private static func secret(_ fields: JSONFields, inline: String, exactBytes: Int? = nil, minimumBytes: Int = 1,
                               folder: String) throws(ConfigError) -> AccessSettings.Secret {
        switch (try fields.string(inline), try fields.string("file")) {
        case (let hex?, nil):
            guard let bytes = Digest.bytes(hex: hex), exactBytes.map({ bytes.count == $0 }) ?? (bytes.count >= minimumBytes) else {
                throw fields.fail(inline, exactBytes.map { "must be \($0 * 2) hex digits" } ?? "must be hex, at least \(minimumBytes) bytes")
            }
            return .bytes(bytes)
        case (nil, let path?):
            guard !path.isEmpty, path.utf8.count <= 4096 else { throw fields.fail("file", "must be a path") }
            return .file(path: path, configFolder: folder)
        default:
            throw fields.fail(inline, "give exactly one of \(inline) and file")
        }
    }
}
