#if canImport(Glibc)
import Glibc
#endif
import CThumbWorker
import ThumbSystem

/// Why a frame could not be sent or received whole.
enum FrameTransportError: Error, Equatable {
    /// The deadline passed first.
    case timedOut
    /// The peer closed its end (EOF, EPIPE or ECONNRESET) after `receivedBytes` of the frame.
    case closed(receivedBytes: Int)
    case failed(SystemError)
    /// What arrived breaks the protocol (including a descriptor where none may come).
    case malformed(WorkerProtocolError)
}

/// One end of a worker socketpair (SOCK_STREAM): frames out and in, each bounded by a deadline
/// (nil: none, for the worker, which blocks). A non-blocking end waits in `poll` with the time
/// remaining, once per partial read or write: never a sleep loop.
struct FrameSocket {
    let descriptor: Int32

    /// Sends `frame` whole, with `passing` attached (SCM_RIGHTS) to its first byte.
    func send(_ frame: [UInt8], passing: Int32? = nil, deadline: ContinuousClock.Instant?) throws(FrameTransportError) {
        var sent = 0
        while sent < frame.count {
            let attached = sent == 0 ? (passing ?? -1) : -1
            let result = frame.withUnsafeBytes { bytes in
                CThumb_SendWithDescriptor(descriptor, bytes.baseAddress! + sent, bytes.count - sent, attached)
            }
            if result >= 0 {
                sent += result
                continue
            }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: try wait(for: Int16(POLLOUT), until: deadline)
            case EPIPE, ECONNRESET: throw .closed(receivedBytes: 0)
            default: throw .failed(SystemError(operation: "sendmsg to the worker socket", errno: code))
            }
        }
    }

    /// Receives one frame whose header must pass `check` (type, request id) with a payload of at
    /// most `maxPayloadBytes`: the whole frame, and the descriptor that came with it when
    /// `acceptsDescriptor` (any other descriptor is closed and the frame refused).
    func receiveFrame(maxPayloadBytes: Int, deadline: ContinuousClock.Instant?, acceptsDescriptor: Bool = false,
                      check: (WorkerFrameHeader) throws(WorkerProtocolError) -> Void = { _ in })
        throws(FrameTransportError) -> (frame: [UInt8], descriptor: Int32?) {
        var frame: [UInt8] = []
        var passed: Int32? = nil
        do throws(FrameTransportError) {
            try receive(WorkerFrameHeader.byteCount, into: &frame, passed: &passed, acceptsDescriptor: acceptsDescriptor, deadline: deadline)
            let header: WorkerFrameHeader
            do throws(WorkerProtocolError) {
                header = try WorkerFrameHeader.decode(frame, maxPayloadBytes: maxPayloadBytes)
                try check(header)
            } catch {
                throw FrameTransportError.malformed(error)
            }
            try receive(header.payloadBytes, into: &frame, passed: &passed, acceptsDescriptor: acceptsDescriptor, deadline: deadline)
        } catch {
            if let passed { close(passed) }
            throw error
        }
        return (frame, passed)
    }

    /// Appends exactly `count` more bytes to `frame`, growing it only as bytes arrive (a length
    /// that lies costs nothing until the bytes come).
    private func receive(_ count: Int, into frame: inout [UInt8], passed: inout Int32?, acceptsDescriptor: Bool,
                         deadline: ContinuousClock.Instant?) throws(FrameTransportError) {
        let target = frame.count + count
        while frame.count < target {
            let start = frame.count
            let chunk = min(target - start, max(64 << 10, start))
            frame.append(contentsOf: repeatElement(0, count: chunk))
            var received: Int32 = -1
            var discarded: Int32 = 0
            let result = frame.withUnsafeMutableBytes { bytes in
                CThumb_ReceiveWithDescriptor(descriptor, bytes.baseAddress! + start, chunk, 0, &received, &discarded)
            }
            let code = errno
            frame.removeLast(chunk - max(0, result))
            if received >= 0 {
                if acceptsDescriptor && passed == nil {
                    passed = received
                } else {
                    close(received)
                    discarded += 1
                }
            }
            if discarded > 0 {
                let problem = acceptsDescriptor ? "more than one descriptor came with one frame" : "a descriptor came with a frame that may carry none"
                throw .malformed(WorkerProtocolError(field: "frame.descriptors", problem: problem))
            }
            if result > 0 { continue }
            if result == 0 { throw .closed(receivedBytes: frame.count) }
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: try wait(for: Int16(POLLIN), until: deadline)
            case ECONNRESET: throw .closed(receivedBytes: frame.count)
            default: throw .failed(SystemError(operation: "recvmsg from the worker socket", errno: code))
            }
        }
    }

    /// One poll for `events` with the time left (recomputed on EINTR by the funnel's retry).
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant?) throws(FrameTransportError) {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        let ready: Int32
        do throws(SystemError) {
            ready = try systemCall("poll on the worker socket") { poll(&entry, 1, Self.milliseconds(until: deadline)) }
        } catch {
            throw .failed(error)
        }
        if ready == 0 { throw .timedOut }
        // POLLHUP or POLLERR: the next read or write says what happened.
    }

    /// poll's timeout: -1 without a deadline, else the time left rounded up (so that the wait
    /// never wakes before the deadline and spins), at least 0.
    static func milliseconds(until deadline: ContinuousClock.Instant?) -> Int32 {
        guard let deadline else { return -1 }
        let left = ContinuousClock.now.duration(to: deadline)
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }
}
