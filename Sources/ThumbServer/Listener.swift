#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbPipeline

/// A bound, listening socket: ours, or passed by the service manager.
public struct Listener: Sendable {
    public let descriptor: Int32
    /// "unix:/run/thumbd/thumbd.sock", "tcp:127.0.0.1:8080", "fd:3".
    public let description: String
    /// The socket file we created (removed at exit), if any.
    public let unixPath: String?

    /// Sockets passed by systemd socket activation (LISTEN_PID, LISTEN_FDS, fds from 3).
    public static func activated(environment: [String: String]) -> [Listener] {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int32($0) }), count > 0 else { return [] }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        return (0..<count).map { offset in
            let descriptor = 3 + offset
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            return Listener(descriptor: descriptor, description: "fd:\(descriptor)", unixPath: nil)
        }
    }

    /// Binds a Unix socket at `path` (a stale socket file is replaced), with permission `mode`
    /// and, when given, group `group`.
    public static func unix(path: String, mode: Int, group: String?) throws(SystemError) -> Listener {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(operation: "socket path \(path) is too long", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let descriptor = try systemCall("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do throws(SystemError) {
            var status = stat()
            if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
            // The socket file is created with the final mode: no window with wider permissions.
            let previous = umask(mode_t(0o777 & ~mode))
            defer { umask(previous) }
            try bind(descriptor, to: address, "bind \(path)")
            try systemCall("chmod \(path)") { chmod(path, mode_t(mode)) }
            if let group {
                guard let entry = getgrnam(group) else { throw SystemError(operation: "group \(group) for \(path)", errno: ENOENT) }
                try systemCall("chown \(path)") { chown(path, uid_t.max, entry.pointee.gr_gid) }
            }
            try systemCall("listen \(path)") { listen(descriptor, 1024) }
        } catch {
            close(descriptor)
            throw error
        }
        return Listener(descriptor: descriptor, description: "unix:\(path)", unixPath: path)
    }

    /// Binds a loopback TCP listener.
    public static func tcp(_ address: ListenAddress) throws(SystemError) -> Listener {
        let family = address.host.contains(":") ? AF_INET6 : AF_INET
        let descriptor = try systemCall("socket(tcp)") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do throws(SystemError) {
            var one: Int32 = 1
            try systemCall("setsockopt SO_REUSEADDR") { setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            let what = "bind \(address.host):\(address.port)"
            if family == AF_INET {
                var socketAddress = sockaddr_in()
                socketAddress.sin_family = sa_family_t(AF_INET)
                socketAddress.sin_port = address.port.bigEndian
                guard inet_pton(AF_INET, address.host, &socketAddress.sin_addr) == 1 else {
                    throw SystemError(operation: "address \(address.host)", errno: EINVAL)
                }
                try bind(descriptor, to: socketAddress, what)
            } else {
                var socketAddress = sockaddr_in6()
                socketAddress.sin6_family = sa_family_t(AF_INET6)
                socketAddress.sin6_port = address.port.bigEndian
                guard inet_pton(AF_INET6, address.host, &socketAddress.sin6_addr) == 1 else {
                    throw SystemError(operation: "address \(address.host)", errno: EINVAL)
                }
                try bind(descriptor, to: socketAddress, what)
            }
            try systemCall("listen") { listen(descriptor, 1024) }
        } catch {
            close(descriptor)
            throw error
        }
        return Listener(descriptor: descriptor, description: "tcp:\(address.host):\(address.port)", unixPath: nil)
    }

    /// bind(2) with any sockaddr_* value.
    private static func bind<Address>(_ descriptor: Int32, to address: Address, _ what: String) throws(SystemError) {
        var address = address
        try withUnsafePointer(to: &address) { (pointer) throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (raw) throws(SystemError) in
                try systemCall(what) { Glibc.bind(descriptor, raw, socklen_t(MemoryLayout<Address>.size)) }
            }
        }
    }
}
