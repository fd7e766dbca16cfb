#if canImport(Glibc)
import Glibc
#endif
package import Synchronization
import ThumbSystem

/// A render worker's stderr is a pipe of the daemon's, never the daemon's own log: a worker runs
/// the code that parses hostile bytes, so what it writes is hostile too. Its end of the pipe is
/// non-blocking (past the pipe's 64 KiB a worker's writes fail and are lost, it never waits on the
/// daemon); the daemon reads what is there after each order and when it reaps the worker, and
/// hands on at most `maxLines` lines of at most `maxLineBytes` each, control characters escaped
/// and prefixed with the worker's pid, so that nothing a worker writes can pose as the daemon.
package enum WorkerStderr {
    static let maxLines = 8
    static let maxLineBytes = 512
    /// Read per relay at most (a pipe holds 64 KiB; the rest waits for the next relay or is dropped
    /// with the worker).
    static let maxReadBytes = 64 << 10

    /// Where relayed lines go: the daemon sets its log (`Log.warning`) at start-up; by default
    /// they are written as text lines on this process's stderr.
    package static let sink = Mutex<@Sendable (String) -> Void>({ line in
        let bytes = Array("thumbd: warning: \(line)\n".utf8)
        bytes.withUnsafeBytes { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    })

    package static func use(_ newSink: @escaping @Sendable (String) -> Void) { sink.withLock { $0 = newSink } }

    /// The lines worth relaying from `bytes` read off worker `pid`'s pipe: each prefixed and made
    /// safe for a text log (`JSONLines.textLine`), long ones cut, the count bounded (with a last
    /// line saying how much was left out). A pure function: tests drive it directly.
    static func lines(of bytes: [UInt8], pid: Int32) -> [String] {
        var lines: [String] = []
        var omittedBytes = 0
        for raw in bytes.split(separator: 0x0A, omittingEmptySubsequences: true) {
            guard lines.count < maxLines else {
                omittedBytes += raw.count + 1
                continue
            }
            let kept = raw.prefix(maxLineBytes)
            let text = JSONLines.textLine(String(decoding: kept, as: UTF8.self))
            lines.append("render worker \(pid) wrote: \(text)" + (raw.count > kept.count ? " [\(raw.count - kept.count) more bytes]" : ""))
        }
        if omittedBytes > 0 { lines.append("render worker \(pid) wrote \(omittedBytes) more bytes (not logged)") }
        return lines
    }

    /// Reads what worker `pid` left in its pipe (non-blocking) and relays it.
    static func relay(from descriptor: Int32, pid: Int32) {
        var buffer = [UInt8](repeating: 0, count: maxReadBytes)
        var filled = 0
        while filled < buffer.count {
            let got = buffer.withUnsafeMutableBytes { raw in
                try? systemCall("read stderr of render worker \(pid)") { read(descriptor, raw.baseAddress! + filled, raw.count - filled) }
            }
            guard let got, got > 0 else { break }
            filled += got
        }
        guard filled > 0 else { return }
        let relayed = lines(of: Array(buffer[..<filled]), pid: pid)
        let deliver = sink.withLock { $0 }
        for line in relayed { deliver(line) }
        // Whatever is still in the pipe past this read is left for the next relay (or dropped).
    }
}
