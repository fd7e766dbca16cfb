#if canImport(Glibc)
import Glibc
#endif

/// sd_notify without libsystemd: one datagram to `$NOTIFY_SOCKET` per message. Does nothing
/// when not started by a service manager.
public struct SystemdNotifier: Sendable {
    private let path: String?

    public init(environment: [String: String]) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public var isActive: Bool { path != nil }

    /// The watchdog interval systemd expects pings within, if any (WATCHDOG_USEC, for this process).
    public static func watchdogInterval(environment: [String: String]) -> Double? {
        guard let text = environment["WATCHDOG_USEC"], let micros = Double(text), micros > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return micros / 1_000_000
    }

    /// Sends `state` (e.g. "READY=1\nSTATUS=serving"). Failures are logged, never fatal.
    public func notify(_ state: String) {
        guard let path else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 } // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        if sent < 0 { Log.warning("sd_notify to \(path) failed: \(String(cString: strerror(errno)))") }
    }
}
