#if canImport(Glibc)
import Glibc
#endif
package import ThumbConfiguration
import ThumbImaging
import ThumbPipeline
package import ThumbSystem
import CSystemd

/// A bound, listening socket: ours, or passed by the service manager.
package struct Listener: Sendable {
    package let descriptor: Int32
    /// "unix:/run/thumbd/thumbd.sock", "tcp:127.0.0.1:8080", "fd:3".
    package let description: String
    /// The socket file we created (removed at exit), if any.
    package let unixPath: String?

    /// Sockets passed by systemd socket activation (`sd_listen_fds(3)`: LISTEN_PID, LISTEN_FDS,
    /// descriptors from 3, each made close-on-exec; the variables are unset so that no child
    /// takes the sockets for its own).
    package static func activated() -> [Listener] {
        let count = sd_listen_fds(1)
        guard count > 0 else { return [] }
        unsetenv("LISTEN_FDNAMES")
        return (0..<count).map { offset in
            let descriptor = SD_LISTEN_FDS_START + offset
            return Listener(descriptor: descriptor, description: "fd:\(descriptor)", unixPath: nil)
        }
    }

    /// Binds a Unix socket at `path`, with permission `mode` and, when given, group `group`.
    ///
    /// A socket file already there is replaced only when it is stale: `PATH.lock` (flocked for
    /// as long as this process lives) must be free, and a `connect()` to the socket must be
    /// refused. When another server holds the lock or answers, this fails with EADDRINUSE and
    /// leaves its socket alone (unlinking it would make that server unreachable for good).
    package static func unix(path: String, mode: Int, group: String?) throws(SystemError) -> Listener {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(operation: "socket path \(path) is too long", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let lock = try takeSocketLock(path)
        let descriptor: Int32
        do throws(SystemError) {
            descriptor = try systemCall("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        } catch {
            close(lock)
            throw error
        }
        do throws(SystemError) {
            var status = stat()
            if (try? systemCall("lstat \(path)", { lstat(path, &status) })) != nil && (status.st_mode & S_IFMT) == S_IFSOCK {
                try refuseIfAnswering(path, address)
                try systemCall("unlink stale socket \(path)") { unlink(path) }
            }
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
            close(lock)
            throw error
        }
        // The lock stays held (its descriptor open) until the process exits.
        return Listener(descriptor: descriptor, description: "unix:\(path)", unixPath: path)
    }

    /// `flock(LOCK_EX | LOCK_NB)` on `path.lock`: two thumbd starting on one socket path at once
    /// cannot both find it stale and unlink each other's fresh socket.
    static func takeSocketLock(_ path: String) throws(SystemError) -> Int32 {
        let lockPath = path + ".lock"
        let fd = try systemCall("open \(lockPath)") { open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        do throws(SystemError) {
            try systemCall("flock \(lockPath)") { flock(fd, LOCK_EX | LOCK_NB) }
        } catch {
            close(fd)
            guard error.errno == EWOULDBLOCK else { throw error }
            throw SystemError(operation: "socket \(path) belongs to another running thumbd (it holds \(lockPath))", errno: EADDRINUSE)
        }
        return fd
    }

    /// Connects to the socket at `path`: refused (ECONNREFUSED: nobody listens) means stale;
    /// anything else — an answer, a full backlog, no permission to try — means it may be live.
    static func refuseIfAnswering(_ path: String, _ address: sockaddr_un) throws(SystemError) {
        let probe = try systemCall("socket(AF_UNIX) probe") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        defer { close(probe) }
        var address = address
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                Result { () throws(SystemError) in
                    try systemCall("connect \(path)") { connect(probe, raw, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
        }
        switch result {
        case .failure(let error) where error.errno == ECONNREFUSED || error.errno == ENOENT:
            return
        case .failure(let error):
            throw SystemError(operation: "socket \(path) exists and may be live (connect: \(error)); not replacing it", errno: EADDRINUSE)
        case .success:
            throw SystemError(operation: "socket \(path) is in use: a server answered on it; not replacing it", errno: EADDRINUSE)
        }
    }

    /// Binds a loopback TCP listener.
    package static func tcp(_ address: ListenAddress) throws(SystemError) -> Listener {
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
