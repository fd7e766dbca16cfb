import Foundation
package import ThumbConfiguration
package import ThumbSystem

extension RedisQueue {
    package typealias Address = RedisQueueAddress
}

extension RedisQueueAddress {
    /// Where the password came from.
    package enum PasswordSource: Equatable, Sendable {
        case none, url, file(String), credential(String)
    }

    /// The credentials to `AUTH` with, and where the password came from; a password file
    /// that cannot be read (or is empty) is a configuration error naming it.
    package func credentials(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(RedisError) -> (RedisCredentials?, PasswordSource) {
        func read(_ path: String) throws(RedisError) -> String {
            let bytes: [UInt8]
            do throws(SmallFileError) {
                bytes = try SmallFile.read(path, maxBytes: 4096)
            } catch {
                throw RedisError(.authentication, operation: "read the Redis password file \(path)", message: error.description)
            }
            // One line: a trailing newline (echo, most editors) is not part of the password.
            let text = String(decoding: bytes, as: UTF8.self)
            let password = text.hasSuffix("\r\n") ? String(text.dropLast(2)) : text.hasSuffix("\n") ? String(text.dropLast()) : text
            guard !password.isEmpty else {
                throw RedisError(.authentication, operation: "read the Redis password file \(path)", message: "it is empty")
            }
            return password
        }
        if let passwordFile {
            return (RedisCredentials(user: user, password: try read(passwordFile)), .file(passwordFile))
        }
        if let urlPassword { return (RedisCredentials(user: user, password: urlPassword), .url) }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = directory + "/redis-password"
            if FileManager.default.fileExists(atPath: path) {
                return (RedisCredentials(user: user, password: try read(path)), .credential(path))
            }
        }
        return (nil, .none)
    }
}
