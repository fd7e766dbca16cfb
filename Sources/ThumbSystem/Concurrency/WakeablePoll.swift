#if canImport(Glibc)
import Glibc
#endif

/// A thread's wait on one descriptor (an inotify instance) that another thread can cut short:
/// `wait` returns when the descriptor is readable, `wake` was called, or the timeout passed.
/// The folder watcher and the spool's doorbell both wait this way.
///
/// The wake channel is a socket pair (Glibc's Swift module has neither `pipe2` nor `eventfd`,
/// and `pipe` + `fcntl` would leak the descriptors into a concurrent fork). Its byte is never
/// read: once woken, every later wait returns at once, so a stop is never missed.
package final class WakeablePoll: Sendable {
    private let watched: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// What ended a wait.
    package struct Wake: Equatable, Sendable {
        /// The watched descriptor has something to read.
        package var readable: Bool
        /// `wake` was called (now or before).
        package var woken: Bool
    }

    /// Waits on `descriptor`, which the caller keeps open for the poll's lifetime and closes.
    package init(watching descriptor: Int32, label: String) throws(SystemError) {
        watched = descriptor
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        try systemCall("socketpair for \(label)") { socketpair(AF_UNIX, type, 0, &pair) }
        (wakeRead, wakeWrite) = (pair[0], pair[1])
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Waits at most `timeoutMilliseconds` (negative: no limit).
    package func wait(timeoutMilliseconds: Int32) throws(SystemError) -> Wake {
        var descriptors = [pollfd(fd: watched, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        try systemCall("poll") { poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds) }
        return Wake(readable: descriptors[0].revents != 0, woken: descriptors[1].revents != 0)
    }

    /// Waits for `wake` alone, at most `milliseconds` (the pause after a failed `wait`, instead
    /// of a spin or a sleep a stop would have to wait out). True when woken.
    package func pause(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        _ = try? systemCall("poll") { poll(&descriptor, 1, milliseconds) }
        return descriptor.revents != 0
    }

    /// Ends the wait under way, and every later one at once.
    package func wake() {
        var byte: UInt8 = 1
        // EAGAIN: the socket's buffer is full of earlier wakes, which wake as well.
        _ = try? systemCall("wake poll") { write(wakeWrite, &byte, 1) }
    }
}
