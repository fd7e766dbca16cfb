internal import CHiredis
#if canImport(Glibc)
import Glibc
#endif

/// A reply from Redis.
package indirect enum RedisValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case array([RedisValue])
    case null
    case status(String)

    package var string: String? {
        switch self {
        case .string(let text), .status(let text): text
        case .integer(let value): String(value)
        default: nil
        }
    }

    package var array: [RedisValue] { if case .array(let items) = self { items } else { [] } }
}

/// A failed Redis command or connection: what was attempted and what Redis (or the socket) said.
package struct RedisError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable {
        /// The connection could not be made or was lost (refused, reset, closed, timed out): the
        /// command may or may not have run. A follower reconnects. Also Redis's "not now"
        /// replies (`RedisConnection.isTransient`: LOADING after a restart, …).
        case connection
        /// Redis answered with an error.
        case reply
        /// Redis refused the credentials (or wants some): a configuration error.
        case authentication
    }

    package var kind: Kind
    package var operation: String
    package var message: String
    package var description: String { "\(operation): \(message)" }

    package init(_ kind: Kind, operation: String, message: String) {
        self.kind = kind
        self.operation = operation
        self.message = message
    }
}

/// Who the connection says it is (`AUTH [user] password`). The password is never logged.
package struct RedisCredentials: Sendable, Equatable {
    package var user: String?
    package var password: String

    package init(user: String?, password: String) {
        self.user = user
        self.password = password
    }
}

/// One synchronous hiredis connection. Not thread-safe: one owner thread.
final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>
    let address: String

    /// Connects, then authenticates when `credentials` are given (a refusal throws
    /// `.authentication`).
    init(host: String, port: Int, credentials: RedisCredentials? = nil, timeoutSeconds: Int = 5) throws(RedisError) {
        address = "\(host):\(port)"
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        guard let context = redisConnectWithTimeout(host, Int32(port), timeout) else {
            throw RedisError(.connection, operation: "connect \(host):\(port)", message: "out of memory")
        }
        if context.pointee.err != 0 {
            let message = Self.errorText(context)
            redisFree(context)
            throw RedisError(.connection, operation: "connect \(host):\(port)", message: message)
        }
        // Commands block at most this long beyond their own BLOCK time.
        timeout = timeval(tv_sec: timeoutSeconds + 5, tv_usec: 0)
        _ = redisSetTimeout(context, timeout)
        self.context = context
        if let credentials {
            do throws(RedisError) {
                _ = try command(["AUTH"] + (credentials.user.map { [$0] } ?? []) + [credentials.password], operation: "AUTH")
            } catch where Self.refusesCredentials(error) {
                throw RedisError(.authentication, operation: "AUTH\(credentials.user.map { " as user '\($0)'" } ?? "") at \(address)",
                                 message: error.message)
            }
        }
    }

    deinit { redisFree(context) }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Runs one command (binary-safe arguments); a Redis error reply throws `.reply` (or
    /// `.authentication` when Redis wants credentials: NOAUTH), a lost connection `.connection`.
    /// `operation` names it in errors (the first two words by default).
    func command(_ arguments: [String], operation: String? = nil) throws(RedisError) -> RedisValue {
        let operation = operation ?? arguments.prefix(2).joined(separator: " ")
        // Each argument's exact bytes (a NUL inside, from a producer's field, included): not
        // strdup, which stops at the first NUL while the length would not.
        let copies = arguments.map { argument in
            let bytes = Array(argument.utf8)
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (index, byte) in bytes.enumerated() { copy[index] = CChar(bitPattern: byte) }
            copy[bytes.count] = 0
            return (pointer: copy, count: bytes.count)
        }
        defer { copies.forEach { $0.pointer.deallocate() } }
        var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0.pointer) }
        var lengths: [Int] = copies.map(\.count)
        guard let raw = redisCommandArgv(context, Int32(arguments.count), &pointers, &lengths) else {
            throw RedisError(.connection, operation: operation, message: Self.errorText(context))
        }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return try Self.convert(reply, operation: operation)
    }

    /// Replies that say "not now" rather than "no": a Redis still loading its data after a
    /// restart, a replica without its primary, a script running, a full server. The command did
    /// not run; a follower treats them as a lost connection (reconnects with its backoff)
    /// instead of ending on a reply error.
    static func isTransient(_ message: String) -> Bool {
        ["LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY ", "CLUSTERDOWN", "ERR max number of clients reached"]
            .contains { message.hasPrefix($0) }
    }

    /// Whether an AUTH failure is Redis refusing these credentials (a configuration error, exit
    /// 78, never restarted) rather than anything else an AUTH may meet.
    static func refusesCredentials(_ error: RedisError) -> Bool {
        error.kind == .authentication // WRONGPASS, NOAUTH
            || error.message.contains("without any password configured") // AUTH to a Redis without requirepass
            || error.message.hasPrefix("ERR invalid password") // Redis before 6
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>, operation: String) throws(RedisError) -> RedisValue {
        let value = reply.pointee
        func text() -> String {
            guard let pointer = value.str else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(value.len)), as: UTF8.self)
        }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_STATUS: return .status(text())
        case REDIS_REPLY_INTEGER: return .integer(value.integer)
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_ERROR:
            let message = text()
            let kind: RedisError.Kind = message.hasPrefix("NOAUTH") || message.hasPrefix("WRONGPASS") ? .authentication
                : isTransient(message) ? .connection : .reply
            throw RedisError(kind, operation: operation, message: message)
        case REDIS_REPLY_ARRAY:
            var items: [RedisValue] = []
            for index in 0..<Int(value.elements) {
                guard let element = value.element[index] else { items.append(.null); continue }
                items.append(try convert(element, operation: operation))
            }
            return .array(items)
        default: return .null
        }
    }
}
