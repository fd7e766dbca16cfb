import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The systemd protocol, with the test as the service manager: a NOTIFY_SOCKET datagram socket,
/// WATCHDOG_USEC, and a listening socket passed as fd 3 (LISTEN_FDS=1, LISTEN_PID = the daemon).
@Suite("thumbd serve: systemd protocol")
struct ServeSystemdTests {
    @Test("READY=1 once the passed socket serves, WATCHDOG=1 every second, RELOADING=1 on SIGHUP, STOPPING=1 on SIGTERM")
    func notifyWatchdogAndSocketActivation() throws {
        let daemon = try ServeDaemon(config: ServeDaemon.config(server: ["socket": "own.sock"]),
                                     assets: ["small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        let notify = try ServeSocket(SOCK_DGRAM, at: daemon.directory + "/notify.sock")
        let activated = try ServeSocket(SOCK_STREAM, at: daemon.directory + "/activated.sock")
        try daemon.start(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000", "LISTEN_FDS": "1"],
                         fd3: activated.descriptor, listenPID: true, waitForReady: false)

        var messages: [String] = []
        let ready = try notify.receive(timeout: 15, into: &messages) { $0.contains("READY=1") }
        let readyAt = Date()
        #expect(ready.split(separator: "\n").contains { $0.hasPrefix("STATUS=") }, "READY without STATUS: \(ready)")
        // Ready means served: a request over the passed socket now succeeds at once.
        let health = try ServeCurl.request(socket: activated.path, "/healthz", timeout: 5)
        #expect(health.status == 200, "\(health.summary)")
        let image = try ServeCurl.request(socket: activated.path, "/v1/thumbnails/large/small.png", timeout: 10)
        #expect(image.status == 200 && ServeImageHeader.size(image.body) != nil, "\(image.summary)")
        #expect(!FileManager.default.fileExists(atPath: daemon.directory + "/own.sock"),
                "socket-activated, yet it bound its own socket")
        #expect(daemon.log.contains("on fd:3"), "\(daemon.log)")

        // WATCHDOG_USEC=2000000: pings are due every second (half the interval), so two by about
        // 2 s after READY; the 5 s bound leaves room for a loaded machine.
        var watchdogs = 0
        while watchdogs < 2 {
            let message = try notify.receive(timeout: max(0.1, 5 - Date().timeIntervalSince(readyAt)), into: &messages) { _ in true }
            if message.split(separator: "\n").contains("WATCHDOG=1") { watchdogs += 1 }
        }

        daemon.signal(SIGHUP)
        _ = try notify.receive(timeout: 10, into: &messages) { $0.contains("RELOADING=1") }
        _ = try notify.receive(timeout: 10, into: &messages) { $0.contains("READY=1") }
        daemon.signal(SIGTERM)
        _ = try notify.receive(timeout: 10, into: &messages) { $0.contains("STOPPING=1") }
        #expect(daemon.child?.wait(timeout: 20)?.status == 0, "\(daemon.log)")
        #expect(messages.filter { $0.contains("READY=1") }.count == 2, "READY=1 at start and after the reload: \(messages)")
    }
}

/// A bound Unix socket of the test: the notify socket (datagram) or a listening socket (stream).
final class ServeSocket {
    let descriptor: Int32
    let path: String

    init(_ type: __socket_type, at path: String) throws {
        self.path = path
        var fd = socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        if fd == 3 { // fd 3 is where the child gets it: keep ours elsewhere so that dup2 really happens
            let moved = fcntl(fd, F_DUPFD_CLOEXEC, 10)
            close(fd)
            fd = moved
        }
        descriptor = fd
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw TestFailure("bind \(path): \(String(cString: strerror(errno)))") }
        if type == SOCK_STREAM && listen(fd, 64) != 0 { throw TestFailure("listen: \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    /// Datagrams until one satisfies `wanted` (returned); every one is appended to `messages`.
    func receive(timeout: Double, into messages: inout [String], until wanted: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestFailure("no wanted notification within \(timeout) s; got \(messages)") }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[..<count], as: UTF8.self)
            messages.append(message)
            if wanted(message) { return message }
        }
    }
}
