import CMicroHTTPD
import CThumbHTTP
import Dispatch
package import Synchronization
import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// How long a client may take to send a whole request (headers and body). libmicrohttpd's own
/// timeout restarts with every byte, so a client trickling a byte every few seconds would hold
/// its connection for ever; this deadline does not move.
package struct HTTPRequestDeadline: Sendable, Equatable {
    /// From the moment a connection is ready for a request (accepted, or its previous answer
    /// sent) to the moment the request is whole.
    package var seconds: Double
    /// The same while a listener is crowded: slow (or idle keep-alive) connections make room first.
    package var crowdedSeconds: Double
    /// A listener is crowded from this share of its connection limit on.
    package var crowdedFraction: Double

    package init(seconds: Double = 10, crowdedSeconds: Double = 1, crowdedFraction: Double = 0.75) {
        self.seconds = seconds
        self.crowdedSeconds = crowdedSeconds
        self.crowdedFraction = crowdedFraction
    }

    var nanoseconds: UInt64 { Self.nanoseconds(seconds) }
    var crowdedNanoseconds: UInt64 { Self.nanoseconds(crowdedSeconds) }

    /// Whole nanoseconds of 0 to 86,400 s (NaN and negatives: 0).
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return UInt64(min(seconds, 86_400) * 1e9)
    }
}

/// Counters of every HTTP server of this process, for /metrics.
package final class HTTPTransportMetrics: Sendable {
    package static let process = HTTPTransportMetrics()

    /// Connections closed because their request was not whole by the deadline...
    package let slowClientsCut = Atomic<Int>(0)
    /// ...or by the shorter deadline of a crowded listener.
    package let slowClientsCutWhileCrowded = Atomic<Int>(0)
    /// Connections accepted beyond a listener's limit (in its overflow, `HTTPServer.overflowConnections`).
    package let acceptedOverLimit = Atomic<Int>(0)
    /// Their requests answered 503 at once (probes of /healthz and /readyz are answered as usual).
    package let refusedOverLimit = Atomic<Int>(0)
    /// Requests refused 400 (and their connection closed) for two body lengths.
    package let ambiguousFramingRefused = Atomic<Int>(0)
    /// Connections open now, on every listener.
    package let openConnections = Atomic<Int>(0)
}

/// One open connection, from accept to close. `awaitingSinceNanoseconds` is the monotonic time
/// the connection became ready for its next request, 0 while a request is being answered.
final class HTTPConnectionRecord: Sendable {
    let descriptor: Int32
    let awaitingSinceNanoseconds: Atomic<UInt64>
    let cut = Atomic<Bool>(false)
    /// Who is at the other end: asked once, when the connection is accepted (SO_PEERCRED names
    /// the process that connected, which is what every request on it speaks for).
    let caller: HTTPCaller
    /// Accepted while the listener held its limit already: its one request is answered 503 at once
    /// (a probe is answered) and the connection closed; it has the crowded deadline to send it.
    let isOverLimit: Bool

    init(descriptor: Int32, now: UInt64, caller: HTTPCaller, isOverLimit: Bool = false) {
        self.descriptor = descriptor
        self.caller = caller
        self.isOverLimit = isOverLimit
        awaitingSinceNanoseconds = Atomic(now)
    }

    /// The peer's credentials, or nil when the kernel cannot say (then the caller has no uid
    /// and gets no role beyond `public`).
    static func peerCredentials(of descriptor: Int32) -> PeerCredentials? {
        var uid: uid_t = 0
        var gid: gid_t = 0
        var groups = [gid_t](repeating: 0, count: 256)
        var count = Int32(groups.count)
        let status = groups.withUnsafeMutableBufferPointer { buffer in
            CThumb_PeerCredentials(descriptor, &uid, &gid, buffer.baseAddress, &count)
        }
        guard status == 0 else { return nil }
        return PeerCredentials(uid: uid, gid: gid, groups: Array(groups.prefix(Int(max(0, min(count, 256))))))
    }

    /// The whole request is in: no deadline while it is answered (the render may take long).
    func requestArrived() { awaitingSinceNanoseconds.store(0, ordering: .releasing) }

    /// The answer is sent: the next request's deadline starts now.
    func answered(now: UInt64) { awaitingSinceNanoseconds.store(max(now, 1), ordering: .releasing) }

    static func of(_ connection: OpaquePointer) -> HTTPConnectionRecord? {
        guard let raw = CThumb_HTTPConnectionContext(connection) else { return nil }
        return Unmanaged<HTTPConnectionRecord>.fromOpaque(raw).takeUnretainedValue()
    }
}

/// The open connections of one listener, so that a periodic sweep can cut those whose request
/// is late. libmicrohttpd reports a connection's close before it closes the descriptor, and the
/// sweep shuts descriptors down under the same lock as that report removes them: it never
/// touches a descriptor that was closed (and perhaps reused).
final class HTTPConnectionTable: Sendable {
    /// Connections at which the listener counts as full (its crowding is a share of it).
    let connectionLimit: Int
    /// Connections held in the ordinary way; libmicrohttpd accepts an overflow beyond it, whose
    /// connections are answered at once (`HTTPConnectionRecord.isOverLimit`) instead of waiting
    /// unanswered in the kernel's backlog.
    let admissionLimit: Int
    let deadline: HTTPRequestDeadline
    let transport: HTTPCaller.Transport
    private let records = Mutex<[ObjectIdentifier: HTTPConnectionRecord]>([:])

    init(connectionLimit: Int, admissionLimit: Int? = nil, deadline: HTTPRequestDeadline, transport: HTTPCaller.Transport) {
        self.connectionLimit = connectionLimit
        self.admissionLimit = admissionLimit ?? connectionLimit
        self.deadline = deadline
        self.transport = transport
    }

    static func now() -> UInt64 { max(DispatchTime.now().uptimeNanoseconds, 1) }

    var count: Int { records.withLock { $0.count } }

    fileprivate func opened(_ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let descriptor = CThumb_HTTPConnectionDescriptor(connection)
        let peer = transport == .unixSocket ? HTTPConnectionRecord.peerCredentials(of: descriptor) : nil
        let caller = HTTPCaller(transport: transport, peer: peer)
        let record = records.withLock { records in
            let record = HTTPConnectionRecord(descriptor: descriptor, now: Self.now(), caller: caller,
                                              isOverLimit: records.count >= admissionLimit)
            records[ObjectIdentifier(record)] = record
            return record
        }
        context.pointee = Unmanaged.passRetained(record).toOpaque()
        HTTPTransportMetrics.process.openConnections.add(1, ordering: .relaxed)
        if record.isOverLimit { HTTPTransportMetrics.process.acceptedOverLimit.add(1, ordering: .relaxed) }
    }

    fileprivate func closed(context: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let raw = context.pointee else { return }
        context.pointee = nil
        let record = Unmanaged<HTTPConnectionRecord>.fromOpaque(raw).takeRetainedValue()
        records.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(record)) }
        HTTPTransportMetrics.process.openConnections.subtract(1, ordering: .relaxed)
    }

    /// Shuts down every connection whose request is late; libmicrohttpd then sees the end of
    /// the stream and closes it. Returns how many were cut, and whether the listener was crowded.
    func cutLateConnections(now: UInt64) -> (cut: Int, crowded: Bool) {
        records.withLock { records in
            let crowded = Double(records.count) >= Double(connectionLimit) * deadline.crowdedFraction
            let allowance = crowded ? deadline.crowdedNanoseconds : deadline.nanoseconds
            var cut = 0
            for record in records.values where !record.cut.load(ordering: .relaxed) {
                let since = record.awaitingSinceNanoseconds.load(ordering: .acquiring)
                let recordAllowance = record.isOverLimit ? min(allowance, deadline.crowdedNanoseconds) : allowance
                guard since != 0, now > since, now - since > recordAllowance, record.descriptor >= 0 else { continue }
                // ENOTCONN (the client left already) is as good as done.
                _ = try? systemCall("shutdown(\(record.descriptor))") { shutdown(record.descriptor, Int32(SHUT_RDWR)) }
                record.cut.store(true, ordering: .relaxed)
                cut += 1
            }
            return (cut, crowded)
        }
    }
}

/// libmicrohttpd's connection-events callback; its context is the listener's table.
let httpConnectionEvents: MHD_NotifyConnectionCallback = { context, connection, socketContext, event in
    guard let context, let connection, let socketContext else { return }
    let table = Unmanaged<HTTPConnectionTable>.fromOpaque(context).takeUnretainedValue()
    switch event {
    case .CONNECTION_NOTIFY_STARTED: table.opened(connection, context: socketContext)
    case .CONNECTION_NOTIFY_CLOSED: table.closed(context: socketContext)
    default: break
    }
}
