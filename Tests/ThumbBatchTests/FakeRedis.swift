import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Redis that misbehaves on purpose, on a loopback port: it speaks just enough RESP to read
/// each command and answers with what `reply` says for it (raw RESP; nil closes the connection).
/// What a real redis-server cannot be made to do on cue (answer LOADING, accept and then drop
/// every connection, refuse AUTH for a full server) is what the consumer's resilience is about.
final class FakeRedis: @unchecked Sendable {
    typealias Reply = @Sendable (_ connection: Int, _ arguments: [[UInt8]]) -> String?

    let port: Int
    private let listener: Int32
    private let state = NSLock()
    private var accepted = 0
    private var received: [[[UInt8]]] = []

    /// Connections accepted so far.
    var connections: Int { state.withLock { accepted } }
    /// Every command received, in order, as its arguments' bytes.
    var commands: [[[UInt8]]] { state.withLock { received } }

    init(reply: @escaping Reply) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            _ = Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return // closed by `close()`
                }
                let index = state.withLock { () -> Int in
                    accepted += 1
                    return accepted
                }
                Thread.detachNewThread { [self] in serve(client, index, reply) }
            }
        }
    }

    private var closed = false

    /// Stops accepting (the accept thread ends). Every test closes its fake: the threads hold it.
    func close() {
        guard state.withLock({ () -> Bool in
            defer { closed = true }
            return !closed
        }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        _ = Glibc.close(listener)
    }

    private func serve(_ client: Int32, _ index: Int, _ reply: Reply) {
        defer { _ = Glibc.close(client) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let (arguments, used) = Self.parse(buffer) {
                buffer.removeFirst(used)
                state.withLock { received.append(arguments) }
                guard let answer = reply(index, arguments) else { return }
                let bytes = Array(answer.utf8)
                var sent = 0
                while sent < bytes.count {
                    let wrote = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if wrote < 0 && errno == EINTR { continue }
                    if wrote <= 0 { return }
                    sent += wrote
                }
            }
            let read = recv(client, &chunk, chunk.count, 0)
            if read < 0 && errno == EINTR { continue }
            if read <= 0 { return }
            buffer += chunk[..<read]
        }
    }

    /// One command (`*N\r\n` then N `$LEN\r\nBYTES\r\n`) from the front of `buffer`, and the
    /// bytes it took; nil until it is all there.
    static func parse(_ buffer: [UInt8]) -> ([[UInt8]], Int)? {
        var position = 0
        func line() -> String? {
            guard let end = buffer[position...].firstIndex(of: UInt8(ascii: "\r")), end + 1 < buffer.count else { return nil }
            let text = String(decoding: buffer[position..<end], as: UTF8.self)
            position = end + 2
            return text
        }
        guard let header = line(), header.first == "*", let count = Int(header.dropFirst()) else { return nil }
        var arguments: [[UInt8]] = []
        for _ in 0..<max(0, count) {
            guard let size = line(), size.first == "$", let length = Int(size.dropFirst()),
                  position + length + 2 <= buffer.count else { return nil }
            arguments.append(Array(buffer[position..<position + length]))
            position += length + 2
        }
        return (arguments, position)
    }

    /// The command's name, upper-cased.
    static func name(_ arguments: [[UInt8]]) -> String {
        String(decoding: arguments.first ?? [], as: UTF8.self).uppercased()
    }
}
