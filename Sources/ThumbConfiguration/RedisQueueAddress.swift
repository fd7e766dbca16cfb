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

    /// Why a queue URL was refused: which part, and why. Never the URL itself, which may
    /// hold a password.
    package struct InvalidURL: Error, Sendable, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
    }

    static let claimIdleRange = 1...86_400_000
    static let maxDeliveriesRange = 1...1_000

    package init(validating url: String) throws(InvalidURL) {
        func invalid(_ reason: String) -> InvalidURL { InvalidURL(reason: reason) }
        guard let components = URLComponents(string: url) else { throw invalid("is not a URL") }
        guard components.scheme == "redis" else { throw invalid("is not a redis:// URL") }
        guard let host = components.host, !host.isEmpty else { throw invalid("names no host") }
        let stream = String(components.path.dropFirst())
        guard !stream.isEmpty, !stream.contains("/") else { throw invalid("names no stream (its path is /STREAM, one name)") }
        self.host = host
        let port = components.port ?? 6379
        guard (1...65_535).contains(port) else { throw invalid("port \(port) is outside 1...65535") }
        self.port = port
        self.stream = stream
        if let user = components.user, !user.isEmpty { self.user = user }
        if let password = components.password, !password.isEmpty { urlPassword = password }
        func number(_ name: String, _ value: String?, in range: ClosedRange<Int>) throws(InvalidURL) -> Int {
            guard let value = value.flatMap({ Int($0) }), range.contains(value) else {
                throw invalid("\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        }
        for item in components.queryItems ?? [] {
            switch item.name {
            case "group":
                guard let value = item.value, !value.isEmpty else { throw invalid("group is empty") }
                group = value
            case "claim-idle-ms": claimIdleMilliseconds = try number(item.name, item.value, in: Self.claimIdleRange)
            case "max-deliveries": maxDeliveries = try number(item.name, item.value, in: Self.maxDeliveriesRange)
            case "password-file", "passwordFile":
                guard let value = item.value, !value.isEmpty else { throw invalid("\(item.name) is empty") }
                passwordFile = value
            default:
                // Shortened, and with no control character (the name is percent-decoded): it goes
                // to a terminal or the journal.
                let shown = String(String.UnicodeScalarView(item.name.unicodeScalars.prefix(40).map {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0
                }))
                throw invalid("unknown parameter '\(shown)' "
                              + "(known: group, claim-idle-ms, max-deliveries, password-file)")
            }
        }
    }

    package var results: String { stream + ":results" }
    package var dead: String { stream + ":dead" }
    /// For logs and errors: never the password.
    package var description: String { "redis://\(user.map { $0 + "@" } ?? "")\(host):\(port)/\(stream)" }
}
