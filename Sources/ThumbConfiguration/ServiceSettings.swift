import ThumbImaging

/// The daemon's part of the config: where the cache lives, how it listens, how much it may use.
/// Budgets in bytes.
package struct ServiceSettings: Sendable, Equatable {
    package var cacheDirectory: String?
    package var memoryCacheBytes = 64 << 20
    package var diskCacheBytes = 2 << 30
    /// Render threads; nil: one per core.
    package var workers: Int?
    package var maxQueuedJobs = 4096
    /// Slots (reused cells) remembered at once, and the bytes their ids may take.
    package var maxSlots = 100_000
    package var maxSlotTableBytes = 32 << 20
    /// A slot idle this long is forgotten, token and all, seconds.
    package var slotIdleSeconds = 600
    /// Unix socket path; nil: `$RUNTIME_DIRECTORY/thumbd.sock` or `./thumbd.sock`.
    package var socketPath: String?
    /// Permission bits of the socket file.
    package var socketMode = 0o660
    /// Group owning the socket file (name), if any.
    package var socketGroup: String?
    /// Optional loopback TCP listener, "HOST:PORT".
    package var listen: String?
    /// Open connections per listener.
    package var maxConnections = 1024
    /// HTTP threads per listener.
    package var httpThreads = 2
    /// Longest `wait` a request may ask for, milliseconds; also the default.
    package var maxWaitMilliseconds = 30_000
    /// A spool folder the daemon drains in the background (batch priority), if any.
    package var spool: String?
    /// A Redis stream the daemon (or `thumbd batch --follow`) consumes at batch priority, if any.
    package var queue: RedisQueueAddress?
    /// Decode in sandboxed worker processes (the default). `false` decodes in the daemon's own
    /// threads: only to measure what the sandbox costs.
    package var sandbox = true
    /// Address space of one render worker process (RLIMIT_AS), bytes: a decoder's memory bomb
    /// ends that worker, not the daemon. The default holds the largest decode the image limits
    /// allow (1 GiB of libjpeg memory, a 256 MiB source, the output's float image) with room.
    package var workerMemoryBytes = 4 << 30
    /// Longest one render may take, seconds (wall clock; a worker runs one render on one thread,
    /// so its CPU time is within it). Past it the worker is killed and the file remembered.
    package var renderSeconds: Double = 60

    package init() {}
}

extension ThumbConfig {
    static func parseService(_ root: JSONFields, into config: inout ThumbConfig, folder: String) throws(ConfigError) {
        func absolute(_ path: String) -> String { path.hasPrefix("/") ? path : folder + "/" + path }
        if let cache = try root.fields("cache") {
            try cache.allowOnly(["directory", "memoryBytes", "diskBytes"])
            if let directory = try cache.string("directory") { config.service.cacheDirectory = absolute(directory) }
            if let bytes = try cache.integer("memoryBytes", in: 0...(1 << 40)) { config.service.memoryCacheBytes = bytes }
            if let bytes = try cache.integer("diskBytes", in: (1 << 20)...(1 << 50)) { config.service.diskCacheBytes = bytes }
        }
        if let workers = try root.integer("workers", in: 1...256) { config.service.workers = workers }
        if let sandbox = try root.bool("sandbox") { config.service.sandbox = sandbox }
        if let spool = try root.string("spool") { config.service.spool = absolute(spool) }
        if let url = try root.string("queue") {
            var address: RedisQueueAddress
            do throws(RedisQueueAddress.InvalidURL) {
                address = try RedisQueueAddress(validating: url)
            } catch {
                throw root.fail("queue", "must be redis://[USER@]HOST:PORT/STREAM[?password-file=PATH&group=G&claim-idle-ms=N"
                                + "&max-deliveries=N]: this one \(error.reason)")
            }
            address.passwordFile = address.passwordFile.map(absolute)
            config.service.queue = address
        }
        if let server = try root.fields("server") {
            try server.allowOnly(["socket", "socketMode", "socketGroup", "listen", "maxConnections", "httpThreads",
                                  "maxQueuedJobs", "maxWaitMilliseconds", "maxSlots", "maxSlotTableBytes", "slotIdleSeconds"])
            if let socket = try server.string("socket") { config.service.socketPath = absolute(socket) }
            if let mode = try server.string("socketMode") {
                guard let bits = Int(mode, radix: 8), (0...0o777).contains(bits) else {
                    throw server.fail("socketMode", "must be an octal mode string such as \"0660\"")
                }
                config.service.socketMode = bits
            }
            if let group = try server.string("socketGroup") { config.service.socketGroup = group }
            if let listen = try server.string("listen") {
                guard ListenAddress(listen) != nil else {
                    throw server.fail("listen", "must be HOST:PORT on loopback, e.g. 127.0.0.1:8080")
                }
                config.service.listen = listen
            }
            if let value = try server.integer("maxConnections", in: 1...100_000) { config.service.maxConnections = value }
            if let value = try server.integer("httpThreads", in: 1...64) { config.service.httpThreads = value }
            if let value = try server.integer("maxQueuedJobs", in: 1...1_000_000) { config.service.maxQueuedJobs = value }
            if let value = try server.integer("maxWaitMilliseconds", in: 0...600_000) { config.service.maxWaitMilliseconds = value }
            if let value = try server.integer("maxSlots", in: 1...10_000_000) { config.service.maxSlots = value }
            if let value = try server.integer("maxSlotTableBytes", in: (64 << 10)...(16 << 30)) { config.service.maxSlotTableBytes = value }
            if let value = try server.integer("slotIdleSeconds", in: 1...604_800) { config.service.slotIdleSeconds = value }
        }
    }
}

/// A loopback TCP address, "127.0.0.1:8080" or "[::1]:8080" or "localhost:8080".
package struct ListenAddress: Sendable, Equatable {
    package var host: String
    package var port: UInt16

    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard host == "::1" || host.hasPrefix("127.") else { return nil }
        self.host = host
        self.port = port
    }
}
