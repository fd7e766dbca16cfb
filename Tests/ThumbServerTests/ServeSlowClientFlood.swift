import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A slow-loris attack, bounded in count and time: `connections` sockets that each send one
/// byte of a request that never ends every `byteIntervalSeconds`. A connection the server
/// closes is opened again after `reconnectDelaySeconds`, so the pressure lasts the whole
/// `durationSeconds`. One thread, poll(2); loopback only.
final class ServeSlowClientFlood: @unchecked Sendable {
    struct Report: CustomStringConvertible {
        /// Connections opened (connect accepted by the kernel).
        var opened = 0
        /// Closed by the server after being held at least `heldSeconds` (cut by a deadline).
        var cutAfterHolding = 0
        /// Closed by the server at once (refused: a per-peer cap, a full table).
        var closedAtOnce = 0
        /// Connects the kernel refused (a full backlog) or that failed.
        var connectFailures = 0
        /// Bytes sent in all.
        var bytesSent = 0
        var description: String {
            "opened \(opened), cut after holding \(cutAfterHolding), closed at once \(closedAtOnce), "
                + "connect failures \(connectFailures), bytes sent \(bytesSent)"
        }
    }

    /// A close this long after connecting counts as a cut, not a refusal.
    static let heldSeconds = 0.5
    /// A request line and then a header that never ends.
    static let requestStart = Array("GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: ".utf8)

    let endpoint: ServeEndpoint
    let connections: Int
    let byteIntervalSeconds: Double
    let reconnectDelaySeconds: Double
    let durationSeconds: Double
    private let report = Mutex(Report())
    private let done = DispatchSemaphore(value: 0)

    private struct Slot {
        var descriptor: Int32 = -1
        var connecting = false
        var connectedAt = 0.0
        var nextByteAt = 0.0
        var reconnectAt = 0.0
        var sent = 0
    }

    init(_ endpoint: ServeEndpoint, connections: Int, byteIntervalSeconds: Double, reconnectDelaySeconds: Double,
         durationSeconds: Double) {
        self.endpoint = endpoint
        self.connections = connections
        self.byteIntervalSeconds = byteIntervalSeconds
        self.reconnectDelaySeconds = reconnectDelaySeconds
        self.durationSeconds = durationSeconds
    }

    func start() {
        Thread { [self] in
            run()
            done.signal()
        }.start()
    }

    /// Waits for the flood to end (it always does, after `durationSeconds`).
    func finish() -> Report {
        done.wait()
        return report.withLock { $0 }
    }

    private func run() {
        let start = Date()
        func now() -> Double { Date().timeIntervalSince(start) }
        var slots = [Slot](repeating: Slot(), count: connections)
        var local = Report()
        defer {
            for slot in slots where slot.descriptor >= 0 { close(slot.descriptor) }
            report.withLock { $0 = local }
        }
        func drop(_ index: Int, byServer: Bool) {
            close(slots[index].descriptor)
            if byServer {
                if now() - slots[index].connectedAt >= Self.heldSeconds { local.cutAfterHolding += 1 } else { local.closedAtOnce += 1 }
            }
            slots[index] = Slot(reconnectAt: now() + reconnectDelaySeconds)
        }
        while now() < durationSeconds {
            for index in slots.indices where slots[index].descriptor < 0 && now() >= slots[index].reconnectAt {
                guard let (descriptor, inProgress) = endpoint.connect() else {
                    local.connectFailures += 1
                    slots[index].reconnectAt = now() + reconnectDelaySeconds
                    continue
                }
                local.opened += 1
                // Spread the bytes of all connections over the interval.
                slots[index] = Slot(descriptor: descriptor, connecting: inProgress, connectedAt: now(),
                                    nextByteAt: now() + Double(index % 97) / 97 * byteIntervalSeconds)
            }
            var entries: [pollfd] = []
            var owners: [Int] = []
            for index in slots.indices where slots[index].descriptor >= 0 {
                let events = slots[index].connecting ? Int16(POLLOUT) : Int16(POLLIN)
                entries.append(pollfd(fd: slots[index].descriptor, events: events, revents: 0))
                owners.append(index)
            }
            _ = poll(&entries, nfds_t(entries.count), 50)
            var scratch = [UInt8](repeating: 0, count: 4096)
            for (entry, index) in zip(entries, owners) where entry.revents != 0 {
                if slots[index].connecting {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(entry.fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error != 0 {
                        local.connectFailures += 1
                        drop(index, byServer: false)
                    } else {
                        slots[index].connecting = false
                    }
                    continue
                }
                // Readable: the end of the stream, a reset, or an answer; either way the server is done with it.
                let count = recv(entry.fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
                if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                drop(index, byServer: true)
            }
            let moment = now()
            for index in slots.indices where slots[index].descriptor >= 0 && !slots[index].connecting && moment >= slots[index].nextByteAt {
                let sent = slots[index].sent
                var byte = sent < Self.requestStart.count ? Self.requestStart[sent] : UInt8(ascii: "a")
                if send(slots[index].descriptor, &byte, 1, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) == 1 {
                    slots[index].sent += 1
                    local.bytesSent += 1
                } else if errno != EAGAIN {
                    drop(index, byServer: true)
                    continue
                }
                slots[index].nextByteAt = moment + byteIntervalSeconds
            }
        }
    }
}
