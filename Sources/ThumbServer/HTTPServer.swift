import CMicroHTTPD
import CThumbHTTP
import Synchronization
import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// Answers one request: `respond` must be called exactly once, now or later, from any thread.
public typealias HTTPHandler = @Sendable (HTTPRequest, _ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void

/// HTTP/1.1 over listening sockets we bound (or systemd passed), served by libmicrohttpd: it
/// parses, keeps connections alive, bounds request size and connection count, and suspends a
/// connection while its thumbnail renders, so no HTTP thread ever waits on a decode.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `daemons` is written in init and by stop() (once, from the main thread).
    private var daemons: [OpaquePointer] = []
    let handler: HTTPHandler
    /// Largest request body, bytes (only POST /v1/prefetch has one).
    let maxBodyBytes = 1 << 20
    /// Requests received and not yet fully answered.
    private let activeExchanges = Atomic<Int>(0)

    public init(listeners: [Listener], threadsPerListener: Int, maxConnections: Int, handler: @escaping HTTPHandler) throws(SystemError) {
        self.handler = handler
        let context = Unmanaged.passUnretained(self).toOpaque()
        for listener in listeners {
            guard let daemon = CThumb_HTTPStart(listener.descriptor, UInt32(threadsPerListener), UInt32(maxConnections),
                                                64 << 10, 60, httpAccessHandler, context, httpCompletedHandler, context) else {
                stop()
                throw SystemError(operation: "start HTTP on \(listener.description)", errno: errno == 0 ? EINVAL : errno)
            }
            daemons.append(daemon)
        }
    }

    /// Stops accepting new connections (open ones are still served).
    public func quiesce() {
        for daemon in daemons { _ = MHD_quiesce_daemon(daemon) }
    }

    /// Waits until every request received so far has been answered and sent, or `seconds` pass.
    public func drain(seconds: Double) {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while activeExchanges.load(ordering: .relaxed) > 0 && ContinuousClock.now < deadline { usleep(5_000) }
    }

    public func stop() {
        for daemon in daemons { MHD_stop_daemon(daemon) }
        daemons = []
    }

    fileprivate func access(_ connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
                            uploadSize: UnsafeMutablePointer<Int>, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        if state.pointee == nil {
            // Answer on the next call, never this first one: libmicrohttpd treats a response
            // queued in the first call as "early" and closes the connection after it, which
            // would cost every request a new connection (measured: 5k vs 49k req/s).
            let exchange = HTTPExchange(connection: connection)
            state.pointee = Unmanaged.passRetained(exchange).toOpaque()
            activeExchanges.add(1, ordering: .relaxed)
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
        if let response = exchange.takeResponse() { return queue(response, on: connection) }
        guard !exchange.started else { return .YES }
        exchange.started = true
        if exchange.bodyTooLarge {
            return queue(.error(413, "bodyTooLarge", "request body over \(maxBodyBytes) bytes"), on: connection)
        }
        let request = HTTPRequest(method: method, path: url,
                                  query: Self.values(connection, kind: .GET_ARGUMENT_KIND, lowercased: false),
                                  headers: Self.values(connection, kind: .HEADER_KIND, lowercased: true),
                                  body: exchange.body)
        handler(request) { response in exchange.deliver(response) }
        if let response = exchange.suspendUnlessAnswered() { return queue(response, on: connection) }
        return .YES
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for (name, value) in response.headers { _ = MHD_add_response_header(created, name, value) }
        return MHD_queue_response(connection, UInt32(response.status), created)
    }

    private final class ValueBox {
        var values: [String: String] = [:]
        let lowercased: Bool
        init(lowercased: Bool) { self.lowercased = lowercased }
    }

    private static func values(_ connection: OpaquePointer, kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
        let box = ValueBox(lowercased: lowercased)
        let pointer = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, kind, { context, _, key, value in
            guard let context, let key else { return .YES }
            let box = Unmanaged<ValueBox>.fromOpaque(context).takeUnretainedValue()
            let name = String(cString: key)
            box.values[box.lowercased ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
            return .YES
        }, pointer)
        return withExtendedLifetime(box) { box.values }
    }

    fileprivate func completed(_ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let state, let raw = state.pointee else { return }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(raw)
        exchange.takeUnretainedValue().finish()
        exchange.release()
        state.pointee = nil
        activeExchanges.subtract(1, ordering: .relaxed)
    }
}

/// One request/response on a connection. The response may come from another thread; the
/// connection is suspended until it does.
final class HTTPExchange: @unchecked Sendable {
    private struct State {
        var response: HTTPResponse?
        var suspended = false
        var finished = false
        var answered = false
    }

    let connection: OpaquePointer
    // Touched only by the HTTP thread that owns the connection:
    var body: [UInt8] = []
    var bodyTooLarge = false
    var started = false
    private let state = Mutex(State())

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// The first response wins; later ones (a timeout racing a render) are dropped.
    func deliver(_ response: HTTPResponse) {
        state.withLock { state in
            guard !state.answered, !state.finished else { return }
            state.answered = true
            state.response = response
            if state.suspended {
                state.suspended = false
                MHD_resume_connection(connection)
            }
        }
    }

    /// After the handler ran: the response if it came already, else the connection is suspended.
    func suspendUnlessAnswered() -> HTTPResponse? {
        state.withLock { state in
            if let response = state.response {
                state.response = nil
                return response
            }
            state.suspended = true
            MHD_suspend_connection(connection)
            return nil
        }
    }

    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            defer { state.response = nil }
            return state.response
        }
    }

    func finish() {
        state.withLock { $0.finished = true }
    }
}

private let httpAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, state in
    guard let context, let connection, let url, let method, let uploadSize, let state else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.access(connection, url: String(cString: url), method: String(cString: method), upload: upload,
                         uploadSize: uploadSize, state: state)
}

private let httpCompletedHandler: MHD_RequestCompletedCallback = { context, _, state, _ in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().completed(state)
}
