import CMicroHTTPD
import CThumbHTTP
import Synchronization
import ThumbPipeline
#if canImport(Glibc)
import Glibc
package import ThumbSystem
#endif

/// Answers one request: `respond` must be called exactly once, now or later, from any thread.
package typealias HTTPHandler = @Sendable (HTTPRequest, _ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void

/// HTTP/1.1 over listening sockets we bound (or systemd passed), served by libmicrohttpd: it
/// parses, keeps connections alive, bounds request size and connection count, and suspends a
/// connection while its thumbnail renders, so no HTTP thread ever waits on a decode.
///
/// Under load: a request must be whole within `HTTPRequestDeadline` of its connection being ready
/// for it (a sweep cuts the late ones), one TCP peer may hold a share of the connections only,
/// and while stopping new requests are answered 503 instead of finding a closed socket.
package final class HTTPServer: @unchecked Sendable {
    // @unchecked: `daemons`, `tables` and `sweeper` are written in init and by stop() (once,
    // from the main thread).
    private var daemons: [OpaquePointer] = []
    private var tables: [HTTPConnectionTable] = []
    /// The request-deadline sweep's thread (`thumbd-http-sweep`) and what stops it.
    private var sweeper: (thread: LongLivedThread, lifecycle: Lifecycle)?
    let handler: HTTPHandler
    /// Largest request body, bytes (only POST /v1/prefetch has one).
    let maxBodyBytes = 1 << 20
    /// Silence libmicrohttpd allows on a connection (a slow reader of a large answer); every byte
    /// restarts it, so it is no bound on a request: the request deadline is.
    static let idleTimeoutSeconds: UInt32 = 60
    static let sweepIntervalMilliseconds = 250
    /// Each connection's libmicrohttpd memory pool: a request's line and headers and the answer's
    /// header block. libmicrohttpd zeroes the whole pool before every request on a kept-alive
    /// connection, so its size is paid on every hit (64 KiB was 15% of a hit's CPU time); 24 KiB
    /// still holds the longest request the API takes (a 4096-byte asset path sent all
    /// percent-encoded, 12 KiB) with room for ordinary headers.
    static let connectionMemoryBytes = 24 << 10
    /// Connections a listener accepts beyond its limit, so that a client arriving at a full
    /// listener gets an answer (503 with Retry-After, or its probe's answer) at once instead of
    /// waiting unanswered in the kernel's backlog until a held connection closes. Such a
    /// connection has the crowded deadline to send its request and is closed after it, so the
    /// overflow empties as fast as it fills; only a flood of new connections faster than that
    /// meets the backlog again.
    static func overflowConnections(limit: Int) -> Int { max(32, limit / 8) }
    /// Descriptors kept free for everything else (cache files, index, watcher, render inputs).
    static let reservedDescriptors = 256
    /// Requests received before stopping began and not yet fully answered: `drain` waits for these.
    private let activeExchanges = Atomic<Int>(0)
    /// Requests that arrived while stopping (each answered 503 at once).
    private let lateExchanges = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// What `drain` waits on: once stopping, an exchange whose end brings its count to zero wakes
    /// it. (The counts stay atomics: the request path takes no lock for them.)
    private let exchangesEnded = Condition(())

    /// `maxConnections` per listener; `connectionsPerPeer` on TCP listeners (nil: a quarter of
    /// `maxConnections`). A Unix socket has no peer address: there the request deadline, which
    /// shortens while a listener is crowded, keeps room for new clients.
    package init(listeners: [Listener], threadsPerListener: Int, maxConnections: Int, connectionsPerPeer: Int? = nil,
                requestDeadline: HTTPRequestDeadline = HTTPRequestDeadline(),
                handler: @escaping HTTPHandler) throws(SystemError) {
        self.handler = handler
        let limit = max(1, maxConnections)
        let perPeer = max(1, connectionsPerPeer ?? limit / 4)
        Self.makeRoomForDescriptors(connections: listeners.count.multipliedReportingOverflow(by: limit + Self.overflowConnections(limit: limit)).partialValue)
        let context = Unmanaged.passUnretained(self).toOpaque()
        for listener in listeners {
            let isInternet = Self.isInternet(listener.descriptor)
            // TCP listeners are loopback only, so most clients share one address and meet the
            // per-peer cap long before the listener's limit: crowding counts against that cap, or a
            // flood from 127.0.0.1 would hold every place for it at the relaxed deadline.
            let transport: HTTPCaller.Transport = CThumb_SocketIsUnix(listener.descriptor) == 1 ? .unixSocket : .tcp
            let table = HTTPConnectionTable(connectionLimit: isInternet ? min(limit, perPeer) : limit, admissionLimit: limit,
                                            deadline: requestDeadline, transport: transport)
            tables.append(table)
            var settings = CThumb_HTTPSettings(
                listenDescriptor: listener.descriptor, threads: UInt32(clamping: max(1, threadsPerListener)),
                connectionLimit: UInt32(clamping: limit.addingReportingOverflow(Self.overflowConnections(limit: limit)).partialValue),
                connectionsPerAddress: isInternet ? UInt32(clamping: perPeer) : 0,
                connectionMemoryBytes: Self.connectionMemoryBytes, idleTimeoutSeconds: Self.idleTimeoutSeconds,
                handler: httpAccessHandler, handlerContext: context, completed: httpCompletedHandler, completedContext: context,
                connectionEvents: httpConnectionEvents, connectionEventsContext: Unmanaged.passUnretained(table).toOpaque())
            guard let daemon = CThumb_HTTPStart(&settings) else {
                let code = errno == 0 ? EINVAL : errno
                stop()
                throw SystemError(operation: "start HTTP on \(listener.description)", errno: code)
            }
            daemons.append(daemon)
        }
        do throws(SystemError) {
            try startSweeping()
        } catch {
            stop()
            throw error
        }
    }

    /// Stops taking work, not connections: a closed socket would look like a crash to clients.
    /// Every request that arrives from now on is answered 503 with Retry-After and
    /// `Connection: close`; requests received before are answered as usual.
    package func quiesce() {
        // Sequentially consistent with the ends' loads (`completed`): an end that brings a count
        // to zero either sees the stop and wakes `drain`, or came before `drain` first looks.
        stopping.store(true, ordering: .sequentiallyConsistent)
    }

    /// Waits until every request received before `quiesce` has been answered and sent, or
    /// `seconds` pass; then briefly lets the 503s of late arrivals go out.
    package func drain(seconds: Double) {
        let deadline = ContinuousClock.now + .nanoseconds(HTTPRequestDeadline.nanoseconds(min(seconds, 3600)))
        func secondsLeft(until end: ContinuousClock.Instant) -> Double { max(0, (end - ContinuousClock.now) / .seconds(1)) }
        exchangesEnded.wait(until: { _ in activeExchanges.load(ordering: .sequentiallyConsistent) == 0 },
                            timeoutSeconds: secondsLeft(until: deadline))
        let grace = min(deadline, ContinuousClock.now + .milliseconds(250))
        exchangesEnded.wait(until: { _ in lateExchanges.load(ordering: .sequentiallyConsistent) == 0 },
                            timeoutSeconds: secondsLeft(until: grace))
    }

    package func stop() {
        if let sweeper {
            // A sweep under way finishes before the connections go.
            sweeper.lifecycle.stop()
            sweeper.thread.join()
        }
        sweeper = nil
        for daemon in daemons {
            // Take the listening socket back first: stopping with it still attached makes
            // libmicrohttpd shutdown() it, which a socket systemd passed us must never see (the
            // socket unit fails with "Got POLLHUP on a listening socket"). A plain close leaves
            // systemd's own copy listening.
            let listening = MHD_quiesce_daemon(daemon)
            MHD_stop_daemon(daemon)
            // Not through systemCall: close is never retried, Linux frees the descriptor even on EINTR.
            if listening >= 0 { close(listening) }
        }
        daemons = []
    }

    /// Open connections on every listener of this server.
    package var openConnections: Int { tables.reduce(0) { $0 + $1.count } }

    /// Every `sweepIntervalMilliseconds`, cuts the connections past their request deadline.
    private func startSweeping() throws(SystemError) {
        let lifecycle = Lifecycle()
        let interval = Double(Self.sweepIntervalMilliseconds) / 1000
        let thread = try LongLivedThread.start(name: "thumbd-http-sweep") { [tables] in
            while !lifecycle.waitForStop(timeoutSeconds: interval) {
                let now = HTTPConnectionTable.now()
                for table in tables {
                    let (cut, crowded) = table.cutLateConnections(now: now)
                    guard cut > 0 else { continue }
                    if crowded {
                        HTTPTransportMetrics.process.slowClientsCutWhileCrowded.add(cut, ordering: .relaxed)
                    } else {
                        HTTPTransportMetrics.process.slowClientsCut.add(cut, ordering: .relaxed)
                    }
                }
            }
        }
        sweeper = (thread, lifecycle)
    }

    fileprivate func access(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, upload: UnsafePointer<CChar>?,
                            uploadSize: UnsafeMutablePointer<Int>, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        if state.pointee == nil {
            let record = HTTPConnectionRecord.of(connection)
            // Beyond the listener's limit: answered at once, never left waiting, and closed.
            // Health and readiness probes are answered as usual: a monitoring agent that shares
            // the socket's uid with a runaway client still sees the daemon.
            if let record, record.isOverLimit, !Self.isProbe(method: method, url: url) {
                HTTPTransportMetrics.process.refusedOverLimit.add(1, ordering: .relaxed)
                return queue(.error(503, "tooManyConnections", "this listener holds its connection limit: retry after 1 s",
                                    headers: [("Retry-After", "1")]), on: connection, closing: true)
            }
            // Two body lengths: refused before any body is read, and the connection closed
            // (an answer queued in this first call closes it), so nothing after the headers is
            // ever read as another request. Request smuggling needs a proxy in front that
            // read the other length; the shipped nginx refuses both, another proxy may not.
            if CThumb_HTTPFramingIsAmbiguous(connection) == 1 {
                HTTPTransportMetrics.process.ambiguousFramingRefused.add(1, ordering: .relaxed)
                return queue(.error(400, "ambiguousFraming",
                                    "Content-Length or Transfer-Encoding given twice, or both: send one of them once"),
                             on: connection, closing: true)
            }
            // Answer on the next call, never this first one: libmicrohttpd treats a response
            // queued in the first call as "early" and closes the connection after it, which
            // would cost every request a new connection (measured: 5k vs 49k req/s).
            let late = stopping.load(ordering: .relaxed)
            let exchange = HTTPExchange(connection: connection, arrivedWhileStopping: late, closesConnection: record?.isOverLimit ?? false)
            state.pointee = Unmanaged.passRetained(exchange).toOpaque()
            if late { lateExchanges.add(1, ordering: .relaxed) } else { activeExchanges.add(1, ordering: .relaxed) }
            return .YES
        }
        guard let raw = state.pointee else { return .NO }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let upload, exchange.body.count + uploadSize.pointee <= maxBodyBytes {
                exchange.body.append(contentsOf: UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee))
            } else {
                exchange.bodyTooLarge = true
            }
            uploadSize.pointee = 0
            return .YES
        }
        if let response = exchange.takeResponse() { return queue(response, on: connection, closing: exchange.closesConnection) }
        guard !exchange.started else { return .YES }
        exchange.started = true
        let record = HTTPConnectionRecord.of(connection)
        record?.requestArrived()
        if exchange.arrivedWhileStopping {
            return queue(.failure(.shuttingDown, message: "the server is stopping"), on: connection)
        }
        if exchange.bodyTooLarge {
            return queue(.error(413, "bodyTooLarge", "request body over \(maxBodyBytes) bytes"), on: connection)
        }
        // Made into strings only here, once a request is answered (not at each call for its body).
        let query = Self.queryValues(connection)
        var request = HTTPRequest(method: String(cString: method), path: String(cString: url),
                                  query: query.values, headers: Self.forwardedHeaders(connection), body: exchange.body)
        request.repeatedQueryName = query.repeatedName
        // A connection without a record (never seen opening) is nobody: no peer, TCP's rules.
        request.caller = record?.caller ?? HTTPCaller(transport: .tcp)
        handler(request) { response in exchange.deliver(response) }
        if let response = exchange.suspendUnlessAnswered() { return queue(response, on: connection, closing: exchange.closesConnection) }
        return .YES
    }

    /// `GET` or `HEAD` of `/healthz` or `/readyz` (compared as C strings: no string is made).
    static func isProbe(method: UnsafePointer<CChar>, url: UnsafePointer<CChar>) -> Bool {
        (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) && (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0)
    }

    /// Bodies from this size on are sent from their own storage (`RetainedBytes`), smaller ones
    /// copied (a copy of a short JSON answer costs less than the box that would keep it).
    static let uncopiedBodyBytes = 2048

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer, closing: Bool = false) -> MHD_Result {
        let isStopping = stopping.load(ordering: .relaxed) || closing
        // A cache hit: the entry's prepared response, queued as it is (not while stopping: that
        // answer needs `Connection: close`, which a shared response must not carry).
        if !isStopping, let reusable = response.reusable,
           let prepared = reusable.served.response(variesWithAccept: reusable.variesWithAccept) {
            // libmicrohttpd counts the connection's use of it before this returns; from then on
            // the response outlives the cache entry for as long as this connection sends it.
            ResponseCounters.preparedSends.add(1, ordering: .relaxed)
            return withExtendedLifetime(prepared) { MHD_queue_response(connection, UInt32(response.status), prepared.pointer) }
        }
        ResponseCounters.perRequest.add(1, ordering: .relaxed)
        let created: OpaquePointer?
        if response.body.count >= Self.uncopiedBodyBytes {
            created = RetainedBytes.response(over: response.body)
        } else {
            created = response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for (name, value) in response.headers { _ = MHD_add_response_header(created, name, value) }
        // Keep-alive clients should reconnect to the next instance, not to this one (or, after
        // a request whose end is unknown, start afresh).
        if isStopping { _ = MHD_add_response_header(created, "Connection", "close") }
        return MHD_queue_response(connection, UInt32(response.status), created)
    }

    /// The request headers the API reads (`HTTPRequest.headers`), by lower-cased name: only these
    /// are made into strings, not every header of every request.
    static let forwardedHeaderNames = ["accept", "if-none-match", "host", "origin", "authorization", "content-type",
                                       "access-control-request-method", "access-control-request-headers", "sec-fetch-site"]

    /// The forwarded headers as they were sent; of a name sent twice the last one counts, as
    /// when every header was copied.
    private static func forwardedHeaders(_ connection: OpaquePointer) -> [String: String] {
        let box = ValueBox()
        let pointer = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, .HEADER_KIND, { context, _, key, value in
            guard let context, let key else { return .YES }
            // Compared as C strings, without case (header names are ASCII): no string for the rest.
            guard let name = HTTPServer.forwardedHeaderNames.first(where: { strcasecmp(key, $0) == 0 }) else { return .YES }
            Unmanaged<ValueBox>.fromOpaque(context).takeUnretainedValue().values[name] = value.map { String(cString: $0) } ?? ""
            return .YES
        }, pointer)
        return withExtendedLifetime(box) { box.values }
    }

    private final class ValueBox {
        var values: [String: String] = [:]
        /// The first name sent twice (query parameters only).
        var repeatedName: String?
    }

    /// The query's parameters as sent, and the first name sent more than once: libmicrohttpd
    /// hands every pair over, and a dictionary would silently keep the last while nginx's
    /// `$arg_…` reads the first (`HTTPRequest.repeatedQueryName`).
    private static func queryValues(_ connection: OpaquePointer) -> (values: [String: String], repeatedName: String?) {
        let box = ValueBox()
        let pointer = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
            guard let context, let key else { return .YES }
            let box = Unmanaged<ValueBox>.fromOpaque(context).takeUnretainedValue()
            let name = String(cString: key)
            let old = box.values.updateValue(value.map { String(cString: $0) } ?? "", forKey: name)
            if old != nil, box.repeatedName == nil { box.repeatedName = name }
            return .YES
        }, pointer)
        return withExtendedLifetime(box) { (box.values, box.repeatedName) }
    }

    fileprivate func completed(_ connection: OpaquePointer?, _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        if let connection { HTTPConnectionRecord.of(connection)?.answered(now: HTTPConnectionTable.now()) }
        guard let state, let raw = state.pointee else { return }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(raw)
        let late = exchange.takeUnretainedValue().arrivedWhileStopping
        exchange.takeUnretainedValue().finish()
        exchange.release()
        state.pointee = nil
        let remaining = late ? lateExchanges.subtract(1, ordering: .sequentiallyConsistent).newValue
            : activeExchanges.subtract(1, ordering: .sequentiallyConsistent).newValue
        if remaining == 0 && stopping.load(ordering: .sequentiallyConsistent) { exchangesEnded.update { _ in } }
    }
}

private let httpAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, state in
    guard let context, let connection, let url, let method, let uploadSize, let state else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.access(connection, url: url, method: method, upload: upload, uploadSize: uploadSize, state: state)
}

private let httpCompletedHandler: MHD_RequestCompletedCallback = { context, connection, state, _ in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().completed(connection, state)
}
