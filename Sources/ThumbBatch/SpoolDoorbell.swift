#if canImport(Glibc)
import Glibc
#endif
package import ThumbSystem

/// Wakes a spool's long-running consumer when a job may have landed in `incoming/` (inotify: a
/// producer's rename into it, or a file written there in place) or when it is told to stop (the
/// `WakeablePoll` the folder watcher waits on too), instead of the consumer listing the folder
/// every second: a job starts within milliseconds, an idle consumer costs nothing, and a stop
/// does not wait out a sleep.
package final class SpoolDoorbell: Sendable {
    private let inotifyDescriptor: Int32
    private let events: WakeablePoll

    /// Watches `folder`'s `incoming/` from now on: a job that lands while the consumer drains
    /// still rings when it next waits.
    package init(folder: SpoolFolder) throws(SystemError) {
        let inotify = try systemCall("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)) }
        do {
            let incoming = folder.incoming
            try systemCall("inotify_add_watch \(incoming)") {
                inotify_add_watch(inotify, incoming, UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ONLYDIR))
            }
            events = try WakeablePoll(watching: inotify, label: "the spool doorbell")
        } catch {
            close(inotify)
            throw error
        }
        inotifyDescriptor = inotify
    }

    deinit {
        close(inotifyDescriptor)
    }

    /// Waits until `incoming/` changes, `ring` is called, or `timeoutMilliseconds` pass (a
    /// safety net: the consumer looks again even if an event was somehow lost). True when rung.
    @discardableResult
    package func wait(timeoutMilliseconds: Int32) -> Bool {
        let wake: WakeablePoll.Wake
        do {
            wake = try events.wait(timeoutMilliseconds: max(0, timeoutMilliseconds))
        } catch {
            // poll itself failed (ENOMEM): the caller looks again, after a pause rather than a spin.
            return events.pause(milliseconds: 1000)
        }
        // The events only say "look again": the drain lists the folder itself.
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ((try? systemCall("read inotify") { read(inotifyDescriptor, &buffer, buffer.count) }) ?? 0) > 0 {}
        return wake.woken
    }

    /// Wakes a `wait` now, or the next one at once: the bell stays rung, so a stop is never missed.
    package func ring() {
        events.wake()
    }
}
