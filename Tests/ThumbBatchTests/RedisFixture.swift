import Foundation
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A private `redis-server` on a free 127.0.0.1 port, with a scratch folder; the server and
/// every child started through the fixture are SIGKILLed when it goes away, pass or fail.
final class RedisFixture {
    static let packageRoot = URL(fileURLWithPath: TestPaths.packageRoot)
    /// Checked by `init`, which fails the test when it is missing.
    static let thumbd = (try? TestPaths.builtExecutable("thumbd")) ?? ""

    private let scratchDirectory: ScratchDirectory
    var scratch: URL { scratchDirectory.url }
    let port: Int
    let cliPath: String
    private var children: [ChildProcess] = []
    private var server: ChildProcess?

    /// `appendOnly`: the server keeps an AOF (fsync on every write), so that `restartServer`
    /// brings back every acknowledged write, as a production Redis with `appendfsync always`.
    /// `extra`: more redis-server arguments (`--requirepass`, say).
    init(startServer: Bool = true, appendOnly: Bool = false, extra: [String] = []) throws {
        _ = try TestPaths.builtExecutable("thumbd")
        let folder = try ScratchDirectory("redis")
        scratchDirectory = folder
        cliPath = Self.which("redis-cli") ?? "/usr/bin/redis-cli"
        serverArguments = ["--bind", "127.0.0.1", "--save", "", "--dir", folder.path]
            + (appendOnly ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]) + extra
        guard startServer else {
            port = try Self.freePort()
            return
        }
        // A port found free may be taken by a concurrent test before redis binds it: then another.
        var attempt = 0
        while true {
            attempt += 1
            let port = try Self.freePort()
            let (server, output) = try Self.launch(serverArguments, port: port, cliPath: cliPath)
            if let server {
                self.port = port
                self.server = server
                return
            }
            guard attempt < 5, output.contains("Address already in use") else {
                throw TestFailure("redis-server on port \(port) did not answer PING: \(output)")
            }
        }
    }

    private let serverArguments: [String]
    /// Extra arguments for `cli` (`-a PASSWORD` once the server wants one).
    var cliAuthentication: [String] = []

    /// A server answering PING on `port`, or nil and what it printed.
    private static func launch(_ arguments: [String], port: Int, cliPath: String) throws -> (ChildProcess?, String) {
        guard let serverPath = which("redis-server"), which("redis-cli") != nil else {
            throw TestFailure("redis-server / redis-cli not found on PATH: install Debian's redis-server package (apt-get install redis-server)")
        }
        let server = try ChildProcess(serverPath, ["--port", "\(port)"] + arguments, stdout: .captured, stderr: .captured)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            // PONG, or NOAUTH from a server with a password: either way it answers.
            let reply = try? ChildProcess.run(cliPath, ["-p", "\(port)", "PING"], timeout: 5)
            if let reply, reply.stdout.hasPrefix("PONG") || reply.stdout.contains("NOAUTH") { return (server, "") }
            guard server.isRunning else { break }
            usleep(50_000)
        }
        server.kill()
        return (nil, server.stdout + server.stderr)
    }

    /// SIGKILLs the server (no shutdown: what a crash does).
    func killServer() {
        server?.kill()
    }

    /// Starts the server again on the same port and folder (from its AOF when `appendOnly`).
    func restartServer() throws {
        server?.kill()
        let (restarted, output) = try Self.launch(serverArguments, port: port, cliPath: cliPath)
        guard let restarted else { throw TestFailure("redis-server did not restart on port \(port): \(output)") }
        server = restarted
    }

    deinit {
        for child in children { child.kill() }
        server?.kill()
        scratchDirectory.remove()
    }

    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw TestFailure("bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A thumbd (or any) child, killed with the fixture if still running.
    func start(_ arguments: [String], executable: String = RedisFixture.thumbd, stdin: String? = nil) throws -> ChildProcess {
        let child = try ChildProcess(executable, arguments, stdin: stdin.map { .text($0) } ?? .null, stdout: .captured, stderr: .captured)
        children.append(child)
        return child
    }

    /// `redis-cli` text output, trailing newline removed; lines of commands may be fed on stdin.
    @discardableResult
    func cli(_ arguments: String..., stdin: String? = nil) throws -> String {
        try Self.cli(cliPath, port: port, cliAuthentication + arguments, stdin: stdin)
    }

    /// `redis-cli -p PORT ARGUMENTS`, its output without the trailing newlines.
    static func cli(_ cliPath: String, port: Int, _ arguments: [String], stdin: String? = nil) throws -> String {
        let child = try ChildProcess.run(cliPath, ["-p", "\(port)"] + arguments, stdin: stdin.map { .text($0) } ?? .null, timeout: 20)
        guard child.exitCode == 0 else { throw TestFailure("redis-cli \(arguments): \(child.summary)") }
        var text = child.stdout
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// `redis-cli --json` output, parsed.
    func json(_ arguments: String...) throws -> Any {
        let child = try ChildProcess.run(cliPath, ["-p", "\(port)", "--json"] + cliAuthentication + arguments, timeout: 20)
        guard child.exitCode == 0 else { throw TestFailure("redis-cli \(arguments): \(child.summary)") }
        guard let value = try? JSONSerialization.jsonObject(with: Data(child.stdout.utf8), options: .fragmentsAllowed) else {
            throw TestFailure("redis-cli \(arguments): not JSON: \(child.stdout)")
        }
        return value
    }

    /// Every entry of a stream as its field map, plus "_id" for the entry id.
    func entries(_ stream: String) throws -> [[String: String]] {
        let raw = try json("XRANGE", stream, "-", "+") as? [Any] ?? []
        return raw.compactMap { item -> [String: String]? in
            guard let pair = item as? [Any], let id = pair.first as? String, let fields = pair.last as? [String] else { return nil }
            var map = ["_id": id]
            for index in stride(from: 0, to: fields.count - 1, by: 2) { map[fields[index]] = fields[index + 1] }
            return map
        }
    }

    /// The group's pending count (XPENDING summary form).
    func pendingCount(_ stream: String, group: String = "thumbd") throws -> Int {
        let summary = try json("XPENDING", stream, group) as? [Any]
        return (summary?.first as? Int) ?? -1
    }

    /// XPENDING extended form: (message id, consumer, deliveries).
    func pendingDetails(_ stream: String, group: String = "thumbd") throws -> [(id: String, consumer: String, deliveries: Int)] {
        let rows = try json("XPENDING", stream, group, "-", "+", "10000") as? [[Any]] ?? []
        return rows.map { ($0[0] as? String ?? "", $0[1] as? String ?? "", $0[3] as? Int ?? 0) }
    }
}
