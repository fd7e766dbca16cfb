#if canImport(Glibc)
import Glibc
#endif
package import ThumbSystem

/// Wakes a spool's long-running consumer when a job may have landed in `incoming/` (inotify: a
/// producer's rename into it, or a file written there in place) or when it is told to stop (a
/// socket pair, as `FolderWatcher`'s: the Glibc module has neither `eventfd` nor `pipe2`), instead of the consumer listing the folder every second: a job starts within
/// milliseconds, an idle consumer costs nothing, and a stop does not wait out a sleep.
package final class SpoolDoorbell: Sendable {
    private let inotifyDescriptor: Int32
    private let wakeReadDescriptor: Int32
    private let wakeWriteDescriptor: Int32

    /// Watches `folder`'s `incoming/` from now on: a job that lands while the consumer drains
    /// still rings when it next waits.
    package init(folder: SpoolFolder) throws(SystemError) {
        let inotify = try systemCall("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)) }
        var pair: [Int32] = [-1, -1]
        do {
            let incoming = folder.incoming
            try systemCall("inotify_add_watch \(incoming)") {
                inotify_add_watch(inotify, incoming, UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ONLYDIR))
            }
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            try systemCall("socketpair for the spool doorbell") { socketpair(AF_UNIX, type, 0, &pair) }
        } catch {
            close(inotify)
            throw error
        }
        inotifyDescriptor = inotify
        (wakeReadDescriptor, wakeWriteDescriptor) = (pair[0], pair[1])
    }

    deinit {
        close(inotifyDescriptor)
        close(wakeReadDescriptor)
        close(wakeWriteDescriptor)
    }

    /// Waits until `incoming/` changes, `ring` is called, or `timeoutMilliseconds` pass (a
    /// safety net: the consumer looks again even if an event was somehow lost). True when rung.
    @discardableResult
    package func wait(timeoutMilliseconds: Int32) -> Bool {
        var descriptors = [pollfd(fd: inotifyDescriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wakeReadDescriptor, events: Int16(POLLIN), revents: 0)]
        let count = nfds_t(descriptors.count)
        do {
            try systemCall("poll spool doorbell") { poll(&descriptors, count, max(0, timeoutMilliseconds)) }
        } catch {
            sleep(1) // poll itself failed (ENOMEM): look again in a second rather than spin
        }
        // The events only say "look again": the drain lists the folder itself.
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ((try? systemCall("read inotify") { read(inotifyDescriptor, &buffer, buffer.count) }) ?? 0) > 0 {}
        return descriptors[1].revents & Int16(POLLIN) != 0
    }

    /// Wakes a `wait` now, or the next one at once: the byte is never read, so the bell stays
    /// rung and a stop is never missed.
    package func ring() {
        var byte: UInt8 = 1
        _ = try? systemCall("write spool doorbell") { write(wakeWriteDescriptor, &byte, 1) }
    }
}
