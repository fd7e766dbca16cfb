import CCrypto

/// SHA-256 and HMAC-SHA256 from OpenSSL's libcrypto, and a comparison that takes the same time
/// whatever the bytes: a hand-written hash would be one more thing to get wrong.
package enum Digest {
    package static let sha256Bytes = 32

    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: sha256Bytes)
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }

    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { input in
                digest.withUnsafeMutableBufferPointer { output in
                    _ = HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(clamping: keyBytes.count), input.baseAddress, input.count,
                             output.baseAddress, &length)
                }
            }
        }
        return Array(digest.prefix(Int(min(length, UInt32(EVP_MAX_MD_SIZE)))))
    }

    /// Equal lengths and equal bytes, in a time that depends on the length only.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, a.count) == 0 } }
    }

    /// Lower-case hex of `bytes`.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of an even-length hex text (either case), or nil.
    package static func bytes(hex text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// HMAC-SHA256 under one key, set up once. OpenSSL 3's one-shot `HMAC()` fetches the algorithm
/// from its provider store, allocates a context and hashes the padded key on every call: about
/// 9 % of a signed cache hit's CPU in `perf` (serve-bench). A context keyed once and duplicated
/// per message does only the message's part.
package final class HMACSHA256Key: @unchecked Sendable {
    // Sendable: `prepared` is written only here in init and freed in deinit; `EVP_MAC_CTX_dup`
    // only reads it (it copies the digest contexts and bumps atomic reference counts).
    private let prepared: OpaquePointer?
    private let secret: [UInt8]

    package init(secret: [UInt8]) {
        self.secret = secret
        var context: OpaquePointer?
        if let mac = EVP_MAC_fetch(nil, "HMAC", nil) {
            context = EVP_MAC_CTX_new(mac)
            EVP_MAC_free(mac)
        }
        if let created = context {
            let keyed = "digest".withCString { name in
                "SHA256".withCString { digest in
                    var parameters = [OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: digest), 0),
                                      OSSL_PARAM_construct_end()]
                    return secret.withUnsafeBufferPointer { key in
                        EVP_MAC_init(created, key.baseAddress, key.count, &parameters) == 1
                    }
                }
            }
            if !keyed {
                EVP_MAC_CTX_free(created)
                context = nil
            }
        }
        prepared = context
    }

    deinit { EVP_MAC_CTX_free(prepared) }

    /// The 32-byte MAC of `message`. Should OpenSSL fail to set the key up or copy it (out of
    /// memory), the one-shot `HMAC()` gives the same bytes.
    package func authenticate(_ message: [UInt8]) -> [UInt8] {
        guard let prepared, let context = EVP_MAC_CTX_dup(prepared) else { return Digest.hmacSHA256(key: secret, message: message) }
        defer { EVP_MAC_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: Digest.sha256Bytes)
        var length = 0
        let done = message.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { bytes in
                EVP_MAC_update(context, input.baseAddress, input.count) == 1
                    && EVP_MAC_final(context, bytes.baseAddress, &length, bytes.count) == 1
            }
        }
        guard done, length == Digest.sha256Bytes else { return Digest.hmacSHA256(key: secret, message: message) }
        return output
    }
}

/// RFC 4648 §5 base64url without padding: the signature's form in a URL.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let rest = bytes.count - index
            let b0 = UInt32(bytes[index]), b1 = rest > 1 ? UInt32(bytes[index + 1]) : 0, b2 = rest > 2 ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            text.append(alphabet[Int(group >> 18 & 63)])
            text.append(alphabet[Int(group >> 12 & 63)])
            if rest > 1 { text.append(alphabet[Int(group >> 6 & 63)]) }
            if rest > 2 { text.append(alphabet[Int(group & 63)]) }
            index += 3
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of a base64url text without padding, or nil: a character outside the alphabet,
    /// a length that no byte count encodes to (4n + 1), or bits set in the last character that
    /// no byte holds, so that exactly one text decodes to given bytes (RFC 4648 §3.5).
    package static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        guard utf8.count % 4 != 1 else { return nil }
        for index in utf8.indices {
            guard let value = sextet(utf8[index]) else { return nil }
            utf8[index] = value
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count * 3 / 4)
        var index = 0
        while index < utf8.count {
            let rest = utf8.count - index
            let group = UInt32(utf8[index]) << 18 | UInt32(utf8[index + 1]) << 12
                | (rest > 2 ? UInt32(utf8[index + 2]) << 6 : 0) | (rest > 3 ? UInt32(utf8[index + 3]) : 0)
            bytes.append(UInt8(group >> 16 & 0xff))
            if rest > 2 { bytes.append(UInt8(group >> 8 & 0xff)) }
            if rest > 3 { bytes.append(UInt8(group & 0xff)) }
            if rest == 2, group & 0xffff != 0 { return nil }
            if rest == 3, group & 0xff != 0 { return nil }
            index += 4
        }
        return bytes
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
