import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 8 item 11: one daemon per socket and per cache folder. A second `thumbd serve` (or a
/// `thumbd batch`) is refused with exit 75 and a message naming what is taken; the first keeps
/// its socket, its cache and its clients. Before, the second unlinked the live socket (the
/// first became unreachable) and two processes evicted from one cache by diverging counts.
@Suite("thumbd serve: one daemon per socket and per cache")
struct ServeOwnershipTests {
    static let image = ServePaths.samples + "/pngsuite-basn6a08-alpha.png"

    /// Runs `thumbd ARGUMENTS` beside `daemon` (its folder, its config unless told otherwise)
    /// and returns the exit status and stderr once it exits (nil status: still running after 20 s).
    static func runBeside(_ daemon: ServeDaemon, _ arguments: [String], name: String) throws -> (status: Int32?, log: String) {
        let logPath = daemon.directory + "/\(name).log"
        let child = try ChildProcess(try ServePaths.thumbd(), arguments, environment: ChildProcess.cleanEnvironment,
                                     stdout: .file(daemon.directory + "/\(name).out"), stderr: .file(logPath))
        let status = child.wait(timeout: 20)?.status
        return (status, (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    static func isListening(_ path: String) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    @Test("a second serve on the same cache (and socket) exits 75 naming the first's pid; the first serves on")
    func secondDaemonOnTheSameCache() throws {
        let daemon = try ServeDaemon(assets: ["a.png": Self.image])
        try daemon.start()
        let pid = try #require(daemon.child?.pid)
        let second = try Self.runBeside(daemon, ["serve", "--config", daemon.configPath], name: "second")
        #expect(second.status == 75, "\(second.log)")
        #expect(second.log.contains("<3>") && second.log.contains("is in use by another thumbd (pid \(pid))"), "\(second.log)")
        #expect(Self.isListening(daemon.socket), "the first daemon's socket must still answer")
        #expect(try daemon.request("/v1/thumbnails/large/a.png").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("a second serve on the same socket with another cache exits 75 and does not unlink the live socket")
    func secondDaemonOnTheSameSocket() throws {
        let daemon = try ServeDaemon(assets: ["a.png": Self.image])
        try daemon.start()
        let other = daemon.directory + "/other.json"
        try JSONSerialization.data(withJSONObject: ServeDaemon.config(extra: ["cache": ["directory": "cache-other"]]))
            .write(to: URL(fileURLWithPath: other))
        let second = try Self.runBeside(daemon, ["serve", "--config", other], name: "second")
        #expect(second.status == 75, "\(second.log)")
        #expect(second.log.contains("<3>cannot listen: socket \(daemon.socket) belongs to another running thumbd"), "\(second.log)")
        #expect(Self.isListening(daemon.socket))
        #expect(try daemon.request("/healthz").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// Not a thumbd (no lock file held): the connect() probe alone must keep its socket alive.
    @Test("a socket another server listens on is left alone: exit 75")
    func foreignLiveSocketIsNotReplaced() throws {
        let daemon = try ServeDaemon(assets: ["a.png": Self.image])
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(server) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in daemon.socket.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0 && listen(server, 8) == 0)
        try daemon.start(waitForReady: false)
        let status = daemon.child?.wait(timeout: 20)?.status
        #expect(status == 75, "\(daemon.log)")
        #expect(daemon.log.contains("is in use: a server answered on it; not replacing it"), "\(daemon.log)")
        #expect(Self.isListening(daemon.socket), "the other server's socket was taken away")
    }

    @Test("a stale socket (its server died) is replaced")
    func staleSocketIsReplaced() throws {
        let daemon = try ServeDaemon(assets: ["a.png": Self.image])
        try daemon.start()
        daemon.signal(SIGKILL)
        _ = daemon.child?.wait(timeout: 10)?.status
        #expect(FileManager.default.fileExists(atPath: daemon.socket), "SIGKILL leaves the socket file behind")
        #expect(!Self.isListening(daemon.socket))
        try daemon.start()
        #expect(try daemon.request("/v1/thumbnails/large/a.png").status == 200)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("batch on a cache a daemon holds exits 75; once the daemon stopped it runs")
    func batchOnACacheInUse() throws {
        let daemon = try ServeDaemon(assets: ["a.png": Self.image])
        try daemon.start()
        let refused = try Self.runBeside(daemon, ["batch", "--config", daemon.configPath, "--kinds", "large", daemon.assets], name: "batch")
        #expect(refused.status == 75, "\(refused.log)")
        #expect(refused.log.contains("is in use by another thumbd"), "\(refused.log)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
        let after = try Self.runBeside(daemon, ["batch", "--config", daemon.configPath, "--kinds", "large", daemon.assets], name: "batch-after")
        #expect(after.status == 0, "\(after.log)")
    }
}
