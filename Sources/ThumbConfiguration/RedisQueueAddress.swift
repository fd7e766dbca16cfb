import Foundation

/// Where the queue is, and how to be let in:
/// `redis://[USER[:PASSWORD]@]HOST:PORT/STREAM[?group=G&claim-idle-ms=N&max-deliveries=N&password-file=PATH]`.
///
/// Parsed where the config or the command line names it; the consumer resolves the password
/// (`RedisQueueAddress.credentials`, in ThumbBatch), in order: `password-file=` (also spelled
/// `passwordFile=`), the URL's own (accepted with a warning: a URL on a command line is visible
/// to every local user in `ps`), then `$CREDENTIALS_DIRECTORY/redis-password` (systemd's
/// `LoadCredential=`).
package struct RedisQueueAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var stream: String
    package var group = "thumbd"
    /// Milliseconds a job may stay pending on another consumer before it is taken over.
    package var claimIdleMilliseconds = 60_000
    package var maxDeliveries = 3
    /// The ACL user (`AUTH user password`); nil: the default user.
    package var user: String?
    package var urlPassword: String?
    package var passwordFile: String?

    package init?(_ url: String) {
        guard let components = URLComponents(string: url), components.scheme == "redis",
              let host = components.host, !host.isEmpty else { return nil }
        let stream = String(components.path.dropFirst())
        guard !stream.isEmpty, !stream.contains("/") else { return nil }
        self.host = host
        let port = components.port ?? 6379
        guard (1...65_535).contains(port) else { return nil }
        self.port = port
        self.stream = stream
        if let user = components.user, !user.isEmpty { self.user = user }
        if let password = components.password, !password.isEmpty { urlPassword = password }
        for item in components.queryItems ?? [] {
            switch item.name {
            case "group": if let value = item.value, !value.isEmpty { group = value } else { return nil }
            case "claim-idle-ms": guard let value = item.value.flatMap(Int.init), value > 0 else { return nil }; claimIdleMilliseconds = value
            case "max-deliveries": guard let value = item.value.flatMap(Int.init), value > 0 else { return nil }; maxDeliveries = value
            case "password-file", "passwordFile": guard let value = item.value, !value.isEmpty else { return nil }; passwordFile = value
            default: return nil
            }
        }
    }

    package var results: String { stream + ":results" }
    package var dead: String { stream + ":dead" }
    /// For logs and errors: never the password.
    package var description: String { "redis://\(user.map { $0 + "@" } ?? "")\(host):\(port)/\(stream)" }
}
