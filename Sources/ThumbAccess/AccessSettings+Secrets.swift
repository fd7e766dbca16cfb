import ThumbSystem

/// A token or key file that cannot be used: which file, and why.
package struct SecretFileError: Error, Equatable, Sendable, CustomStringConvertible {
    package var path: String
    package var reason: String

    package var description: String { "\(path): \(reason)" }
}

extension AccessSettings {
    /// Largest token or key file, bytes: a secret is a line, not a document.
    package static let maxSecretFileBytes = 4096

    /// The tokens' hashes and the keys' secrets, files read (`environment` supplies
    /// `CREDENTIALS_DIRECTORY`). A token file holds the token; a key file its secret in hex.
    package func resolvedSecrets(environment: [String: String]) throws(SecretFileError) -> (tokens: [(Token, [UInt8])], keys: [URLSignature.Key]) {
        var tokens: [(Token, [UInt8])] = []
        for token in self.tokens {
            switch token.sha256 {
            case .bytes(let hash): tokens.append((token, hash))
            case .file(let path, let folder):
                let text = try Self.readLine(Self.locate(path, folder: folder, environment: environment))
                tokens.append((token, Digest.sha256(text)))
            }
        }
        var keys: [URLSignature.Key] = []
        for key in signingKeys {
            switch key.secret {
            case .bytes(let secret): keys.append(.init(id: key.id, secret: secret))
            case .file(let path, let folder):
                let located = Self.locate(path, folder: folder, environment: environment)
                let text = try Self.readLine(located)
                guard let secret = Digest.bytes(hex: String(decoding: text, as: UTF8.self)), secret.count >= URLSignature.minimumSecretBytes else {
                    throw SecretFileError(path: located, reason: "a signing key file holds the secret as hex, at least \(URLSignature.minimumSecretBytes) bytes")
                }
                keys.append(.init(id: key.id, secret: secret))
            }
        }
        return (tokens, keys)
    }

    static func locate(_ path: String, folder: String, environment: [String: String]) -> String {
        if !path.contains("/"), let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
            return credentials + "/" + path
        }
        return path.hasPrefix("/") ? path : folder + "/" + path
    }

    /// The file's bytes without trailing white space; refused empty.
    static func readLine(_ path: String) throws(SecretFileError) -> [UInt8] {
        var bytes: [UInt8]
        do {
            bytes = try SmallFile.read(path, maxBytes: maxSecretFileBytes)
        } catch {
            throw SecretFileError(path: path, reason: error.description)
        }
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { bytes.removeLast() }
        guard !bytes.isEmpty else { throw SecretFileError(path: path, reason: "is empty") }
        return bytes
    }
}
