import Foundation
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Raw sockets for the HTTP-under-load tests, where curl cannot do what a hostile client does
/// (trickle bytes, stop reading) and where a request must not take a process to send.

/// Where a test connects: the daemon's Unix socket, or its loopback TCP port from a chosen source
/// address (127.0.0.2 is another peer than 127.0.0.1 to the daemon).
enum ServeEndpoint: Sendable, CustomStringConvertible {
    case unix(String)
    case tcp(port: UInt16, source: String)

    var description: String {
        switch self {
        case .unix(let path): "unix:\(path)"
        case .tcp(let port, let source): "tcp:127.0.0.1:\(port) from \(source)"
        }
    }

    /// The Host a well-behaved client sends: the TCP listener answers only to its own name (421
    /// otherwise, so a rebound web page cannot drive it); the Unix socket takes any.
    var host: String {
        switch self {
        case .unix: "thumbd"
        case .tcp(let port, _): "127.0.0.1:\(port)"
        }
    }

    /// A non-blocking stream socket whose connect has begun (`inProgress`: TCP, not yet
    /// established), or nil when it was refused (a Unix socket with a full backlog says EAGAIN).
    func connect() -> (descriptor: Int32, inProgress: Bool)? {
        let family = if case .unix = self { AF_UNIX } else { AF_INET }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let result: Int32
        switch self {
        case .unix(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
            }
            result = Self.withSockaddr(&address) { Glibc.connect(descriptor, $0, $1) }
        case .tcp(let port, let source):
            var local = Self.inet(source, port: 0)
            guard Self.withSockaddr(&local, { bind(descriptor, $0, $1) }) == 0 else {
                close(descriptor)
                return nil
            }
            var remote = Self.inet("127.0.0.1", port: port)
            result = Self.withSockaddr(&remote) { Glibc.connect(descriptor, $0, $1) }
        }
        if result == 0 { return (descriptor, false) }
        if errno == EINPROGRESS { return (descriptor, true) }
        close(descriptor)
        return nil
    }

    /// A loopback TCP port free right now (bound to port 0, then released).
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = inet("127.0.0.1", port: 0)
        guard withSockaddr(&address, { bind(descriptor, $0, $1) }) == 0 else {
            throw TestFailure("bind 127.0.0.1:0: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func inet(_ host: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    private static func withSockaddr<Address>(_ address: inout Address, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }
}

/// The test process may hold this many descriptors (and so may the daemon it starts, which
/// inherits the limit): raises the soft limit toward the hard one.
func serveRaiseDescriptorLimit(to wanted: Int) throws {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { throw TestFailure("getrlimit") }
    guard limit.rlim_cur < rlim_t(wanted) else { return }
    limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
    guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur >= rlim_t(wanted) else {
        throw TestFailure("this test needs \(wanted) open files; the hard limit is \(limit.rlim_max)")
    }
}

/// One HTTP answer read off a raw socket.
struct ServeRawAnswer: CustomStringConvertible {
    /// 0: no answer (`failure` says why).
    var status = 0
    /// Lower-cased names.
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var seconds = 0.0
    var failure: String?

    var description: String {
        "\(status) \(failure ?? "") \(headers) after \(String(format: "%.2f", seconds)) s: \(String(decoding: body.prefix(200), as: UTF8.self))"
    }
}

enum ServeRaw {
    /// Sends `request` whole on a new connection and reads the answer until the server closes
    /// (ask for `Connection: close`) or `timeout` seconds pass.
    static func exchange(_ endpoint: ServeEndpoint, _ request: String, timeout: Double) -> ServeRawAnswer {
        let start = Date()
        let deadline = start.addingTimeInterval(timeout)
        var answer = ServeRawAnswer()
        defer { answer.seconds = Date().timeIntervalSince(start) }
        var connected: (descriptor: Int32, inProgress: Bool)?
        while connected == nil {
            connected = endpoint.connect()
            if connected == nil {
                guard Date() < deadline else { answer.failure = "cannot connect to \(endpoint): \(String(cString: strerror(errno)))"; return answer }
                usleep(10_000)
            }
        }
        guard let (descriptor, _) = connected else { return answer }
        defer { close(descriptor) }
        var bytes = Array(request.utf8)[...]
        while !bytes.isEmpty {
            guard wait(descriptor, for: Int16(POLLOUT), until: deadline) else { answer.failure = "could not send in time"; return answer }
            let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                answer.failure = "send: \(String(cString: strerror(errno)))"
                return answer
            }
            bytes = bytes.dropFirst(sent)
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            guard wait(descriptor, for: Int16(POLLIN), until: deadline) else {
                answer.failure = "no end of answer within \(timeout) s (\(received.count) bytes)"
                break
            }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 { received += buffer[..<count]; continue }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            if count < 0 { answer.failure = "recv: \(String(cString: strerror(errno)))" }
            break
        }
        parse(received, into: &answer)
        return answer
    }

    /// Polls one descriptor until `events` or `deadline`.
    static func wait(_ descriptor: Int32, for events: Int16, until deadline: Date) -> Bool {
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(min(left, 60) * 1000) + 1)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    static func parse(_ received: [UInt8], into answer: inout ServeRawAnswer) {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = received.indices.first(where: { received[$0...].starts(with: separator) }) else { return }
        let head = String(decoding: received[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusFields = head.first?.split(separator: " ") ?? []
        answer.status = statusFields.count > 1 ? Int(statusFields[1]) ?? 0 : 0
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            answer.headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        answer.body = Array(received[(end + 4)...])
    }

    /// GET `path` with `Connection: close`.
    static func get(_ endpoint: ServeEndpoint, _ path: String, timeout: Double) -> ServeRawAnswer {
        exchange(endpoint, "GET \(path) HTTP/1.1\r\nHost: \(endpoint.host)\r\nConnection: close\r\n\r\n", timeout: timeout)
    }
}
