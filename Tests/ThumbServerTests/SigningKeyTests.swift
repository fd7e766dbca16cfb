import Foundation
import Testing
import ThumbAccess

/// The signing key's HMAC, set up once and copied per message, against RFC 4231's vectors and
/// OpenSSL's one-shot HMAC, from many threads at once (the HTTP threads share one key).
@Suite struct SigningKeyTests {
    @Test("a prepared HMAC-SHA256 key gives RFC 4231's MACs (short key, key longer than a block) and the one-shot's, from eight threads at once")
    func preparedKeyMatchesVectors() async throws {
        let jefe = HMACSHA256Key(secret: Array("Jefe".utf8))
        #expect(Digest.hex(jefe.authenticate(Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = HMACSHA256Key(secret: [UInt8](repeating: 0xaa, count: 131))
        #expect(Digest.hex(long.authenticate(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")

        let secret = (0..<32).map { UInt8($0 * 7 & 0xff) }
        let shared = HMACSHA256Key(secret: secret)
        let messages = (0..<64).map { Array("thumbd-url-1\nk1\n\nlarge\n2\n\nphotos/\($0).jpg".utf8) }
        let expected = messages.map { Digest.hmacSHA256(key: secret, message: $0) }
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for _ in 0..<50 {
                        for (message, mac) in zip(messages, expected) where shared.authenticate(message) != mac { wrong += 1 }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        // The same key held twice, and a different one, compare by id and secret.
        #expect(URLSignature.Key(id: "k1", secret: secret) == URLSignature.Key(id: "k1", secret: secret))
        #expect(URLSignature.Key(id: "k1", secret: secret) != URLSignature.Key(id: "k1", secret: secret.reversed()))
    }

    @Test("base64url decoding: every length round-trips; padding, foreign characters, a 4n+1 length and stray low bits are refused, so one text stands for one MAC")
    func base64URLDecoding() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...40 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "\(count) bytes")
        }
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
        for refused in ["QQ==", "QQ=", "A", "AAAAA", "a+b/", "QR", "QUF", "QUJ", "Zm9v\n", "Zm9v YmFy"] {
            #expect(Base64URL.decode(refused) == nil, "\(refused)")
        }
        #expect(Base64URL.decode("QQ") == [0x41] && Base64URL.decode("QUI") == [0x41, 0x42])
    }

    @Test("accepted signatures are remembered by text with what they signed: the same URL again is accepted, other fields under that sig are not, expiry still holds, and the memory stays bounded")
    func verifiedSignatureMemo() throws {
        let key = URLSignature.Key(id: "k1", secret: (0..<32).map { UInt8($0) })
        let memo = VerifiedSignatures(capacity: 2)
        let fields = URLSignature.Fields(kind: "large", assetPath: "a/b.jpg", scale: "2", expires: "2000")
        let sig = try #require(URLSignature.signature(fields, key: key))
        #expect(Outcome(URLSignature.verify(fields, keyID: "k1", signature: sig, keys: [key], now: 1000, verified: memo)) == .accepted)
        #expect(memo.count == 1)
        #expect(Outcome(URLSignature.verify(fields, keyID: "k1", signature: sig, keys: [key], now: 1000, verified: memo)) == .accepted)
        // The remembered sig on other fields, or under another key id, is checked, and fails.
        var tampered = fields
        tampered.assetPath = "a/c.jpg"
        #expect(Outcome(URLSignature.verify(tampered, keyID: "k1", signature: sig, keys: [key], now: 1000, verified: memo)) == .refused(.mismatch))
        #expect(Outcome(URLSignature.verify(fields, keyID: "k2", signature: sig, keys: [key], now: 1000, verified: memo)) == .refused(.unknownKey))
        // Past its expiry a remembered URL is refused like any other.
        #expect(Outcome(URLSignature.verify(fields, keyID: "k1", signature: sig, keys: [key], now: 2001, verified: memo)) == .refused(.expired))
        // Bounded: a third accepted URL starts it over.
        for path in ["x/1.jpg", "x/2.jpg"] {
            let other = URLSignature.Fields(kind: "large", assetPath: path)
            let otherSig = try #require(URLSignature.signature(other, key: key))
            #expect(Outcome(URLSignature.verify(other, keyID: "k1", signature: otherSig, keys: [key], now: 1000, verified: memo)) == .accepted)
        }
        #expect(memo.count <= 2)
        // A long asset path is verified but not kept.
        let long = URLSignature.Fields(kind: "large", assetPath: String(repeating: "p", count: 2000))
        let longSig = try #require(URLSignature.signature(long, key: key))
        let before = memo.count
        #expect(Outcome(URLSignature.verify(long, keyID: "k1", signature: longSig, keys: [key], now: 1000, verified: memo)) == .accepted)
        #expect(memo.count == before)
    }

    @Test("a remembered signature is held to its fields' bytes: the NFD spelling of an NFC name (another file on Linux), or a Kelvin sign for K, is checked and refused")
    func verifiedSignatureMemoComparesBytes() throws {
        let key = URLSignature.Key(id: "k1", secret: (0..<32).map { UInt8($0) })
        let memo = VerifiedSignatures()
        for (signedPath, otherSpelling) in [("caf\u{E9}.jpg", "cafe\u{301}.jpg"), ("K.jpg", "\u{212A}.jpg"), ("\u{212B}.png", "\u{C5}.png")] {
            #expect(signedPath == otherSpelling && !signedPath.utf8.elementsEqual(otherSpelling.utf8), "the pair must be equal as Strings only")
            let fields = URLSignature.Fields(kind: "large", assetPath: signedPath, scale: "2")
            let sig = try #require(URLSignature.signature(fields, key: key))
            #expect(Outcome(URLSignature.verify(fields, keyID: "k1", signature: sig, keys: [key], now: 1000, verified: memo)) == .accepted)
            var other = fields
            other.assetPath = otherSpelling
            #expect(Outcome(URLSignature.verify(other, keyID: "k1", signature: sig, keys: [key], now: 1000, verified: memo)) == .refused(.mismatch),
                    "\(Array(otherSpelling.utf8)) verified by the signature of \(Array(signedPath.utf8))")
        }
    }
}

/// A verification's result as a value tests compare (`Result<Void, _>` is not Equatable).
private enum Outcome: Equatable {
    case accepted
    case refused(URLSignature.Refusal)

    init(_ result: Result<Void, URLSignature.Refusal>) {
        switch result {
        case .success: self = .accepted
        case .failure(let refusal): self = .refused(refusal)
        }
    }
}
