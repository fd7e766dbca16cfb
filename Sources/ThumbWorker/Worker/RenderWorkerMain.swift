#if canImport(Glibc)
import Glibc
#endif
package import ThumbImaging
import ThumbSystem

/// The render worker process: what `thumbd`'s internal worker subcommand runs. It decodes
/// attacker-controlled files with nothing to lose: it can open no file and no socket, start no
/// process, signal nobody but itself, and holds only its socket (fd 3) and the source it was
/// passed. The daemon spawns it (`RenderWorker`) with the socket on fd 3, its cancel page on fd 4,
/// /dev/null on 0 and 1, the daemon's stderr on 2, and `THUMBD_WORKER_MEMORY_BYTES` in its environment.
package enum RenderWorkerMain {
    /// The worker's end of its socketpair.
    package static let socketDescriptor: Int32 = 3
    /// The memfd of its cancel page (mapped, then closed before the first request).
    package static let cancelPageDescriptor: Int32 = 4
    /// RLIMIT_AS of the worker, bytes (decimal digits; absent or 0: no limit).
    package static let memoryLimitVariable = "THUMBD_WORKER_MEMORY_BYTES"
    /// Set (to 1) for a video worker, which loads FFmpeg before its sandbox (`WorkerLaunch.loadsVideo`).
    package static let videoVariable = "THUMBD_WORKER_VIDEO"

    /// The order being rendered (0 between orders), for a test worker's fault hook that forges
    /// part of an answer. Only the worker's one thread touches it.
    nonisolated(unsafe) package private(set) static var currentRequestID: UInt64 = 0

    /// Applies the sandbox, says hello, then renders orders until the daemon closes the socket
    /// (exit 0). `faultHook` (test workers only) sees each source's bytes before the render; what
    /// it throws becomes every request's failure.
    package static func run(faultHook: (@Sendable (SourceBytes) throws(ImagingError) -> Void)? = nil) -> Never {
        warmUpBeforeSandbox()
        let page = enterSandbox()
        warmUp()
        let socket = FrameSocket(descriptor: socketDescriptor)
        do throws(FrameTransportError) {
            try socket.send(WorkerHello(pid: getpid()).encode(), deadline: nil)
        } catch {
            exit(.socketFailed, "cannot say hello: \(error)")
        }
        while true {
            let frame: [UInt8]
            let passed: Int32?
            do throws(FrameTransportError) {
                (frame, passed) = try socket.receiveFrame(maxPayloadBytes: WorkerProtocol.maxRenderPayloadBytes, deadline: nil,
                                                          acceptsDescriptor: true) { (header) throws(WorkerProtocolError) in
                    try header.expect(.render)
                }
            } catch {
                switch error {
                case .closed(receivedBytes: 0): exit(.finished, nil)
                case .closed(let received): exit(.protocolViolation, "the daemon closed the socket \(received) bytes into an order")
                case .malformed(let problem): exit(.protocolViolation, "malformed order: \(problem)")
                case .failed(let failure): exit(.socketFailed, failure.description)
                case .timedOut: exit(.socketFailed, "timed out without a deadline")
                }
            }
            let order: WorkerRenderOrder
            do throws(WorkerProtocolError) {
                order = try WorkerRenderOrder.decode(frame: frame)
            } catch {
                if let passed { close(passed) }
                exit(.protocolViolation, "malformed order: \(error)")
            }
            guard let passed else { exit(.protocolViolation, "order \(order.requestID) came without its source descriptor") }
            currentRequestID = order.requestID
            let answer = render(order, source: passed, page: page, faultHook: faultHook)
            currentRequestID = 0
            do throws(FrameTransportError) {
                try socket.send(answer.encode(for: order), deadline: nil)
            } catch {
                exit(.socketFailed, "cannot answer order \(order.requestID): \(error)")
            }
        }
    }

    /// Reads the source from `descriptor` (closed at once: decoding happens holding only the
    /// socket), renders every request from one decode, and times it on the process's CPU clock.
    static func render(_ order: WorkerRenderOrder, source descriptor: Int32, page: CancelPage,
                       faultHook: (@Sendable (SourceBytes) throws(ImagingError) -> Void)?) -> WorkerAnswer {
        let start = processCPUSeconds()
        let results: [Result<Thumbnail, WorkerRenderFailure>]
        var placeholder: Placeholder?
        var placements: [AttentionPlacement] = []
        var sourceFormat: SourceFormat?
        let read = Result { () throws(FileReadError) in
            try SourceBytes.read(descriptor: descriptor, status: order.status, maxBytes: order.limits.maxFileBytes, label: order.label)
        }
        close(descriptor)
        switch read {
        case .failure(let error):
            results = order.requests.map { _ in .failure(.read(error)) }
        case .success(let source):
            sourceFormat = source.format
            let id = order.requestID
            let thumbnailer = Thumbnailer(limits: order.limits, tuning: order.tuning, decodesSandboxOnlyFormats: true)
            do throws(ImagingError) {
                try faultHook?(source)
                let rendered = try thumbnailer.thumbnailSet(of: source, requests: order.requests,
                                                            placeholder: order.placeholder) { page.cancelledRequest == id }
                results = rendered.thumbnails.map { .success($0) }
                placeholder = rendered.placeholder
                placements = rendered.placements
            } catch {
                results = order.requests.map { _ in .failure(.imaging(error)) }
            }
        }
        return WorkerAnswer(results: results, cpuSeconds: max(0, processCPUSeconds() - start), placeholder: placeholder,
                            placements: placements, sourceFormat: sourceFormat)
    }

    /// CPU time of this process (one thread: the render), seconds.
    static func processCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Says why on stderr (a pipe the daemon relays to its log), then exits with `code`.
    static func exit(_ code: RenderWorkerExit, _ message: String?) -> Never {
        if let message { Self.log(message) }
        Glibc.exit(code.rawValue)
    }

    static func log(_ message: String) {
        // Plain text on the pipe the daemon relays (`WorkerStderr`): the daemon formats its log.
        let line = Array((JSONLines.textLine(message) + "\n").utf8)
        line.withUnsafeBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}

/// The worker's exit statuses (sysexits.h), which the daemon names when a worker dies.
package enum RenderWorkerExit: Int32, Sendable, CaseIterable {
    /// The daemon closed the socket between orders.
    case finished = 0
    /// Not started by thumbd (no fd 3 or 4), or a sandbox step failed.
    case setupFailed = 71
    /// The socket failed (not a clean close).
    case socketFailed = 74
    /// A malformed order, or the socket closed in the middle of one.
    case protocolViolation = 76

    package var summary: String {
        switch self {
        case .finished: "finished"
        case .setupFailed: "sandbox set-up failed"
        case .socketFailed: "socket failed"
        case .protocolViolation: "protocol violation"
        }
    }
}
