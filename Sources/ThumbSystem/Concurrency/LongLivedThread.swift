import CThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// The house's one way to start a thread that lives as long as a part of the daemon (a render
/// thread, the folder watcher, the spool consumer): a named POSIX thread running `body`, joined
/// by `join`. Short work goes to the part's own thread or a serial queue, never a fresh thread.
/// The name (at most 15 bytes, the kernel's limit) shows in `top -H`, `ps -L` and core dumps.
package final class LongLivedThread: @unchecked Sendable {
    private let thread: pthread_t
    /// 0: running or not joined yet, 1: a join is under way, 2: joined (or detached).
    private let joinPhase = Condition(0)

    private final class Start {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    private init(thread: pthread_t) {
        self.thread = thread
    }

    /// Starts `body` on a new thread named `name`.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> LongLivedThread {
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            _ = CThumb_nameThisThread(start.name)
            start.body()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw SystemError(operation: "pthread_create \(name)", errno: code)
        }
        return LongLivedThread(thread: thread)
    }

    /// Starts `body` on a new thread named `name` that nobody joins: it ends on its own (a one-off
    /// build the starter may stop waiting for).
    package static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let thread = try start(name: name, body)
        thread.joinPhase.update { $0 = 2 }
        pthread_detach(thread.thread)
    }

    /// Lets the thread end on its own, unjoined (its owner stopped waiting for it). Nothing once
    /// it is joined or a join is under way.
    package func detach() {
        let first = joinPhase.update { phase -> Bool in
            guard phase == 0 else { return false }
            phase = 2
            return true
        }
        if first { pthread_detach(thread) }
    }

    /// Whether the caller is this thread (a part stopped from its own thread cannot wait for it).
    package var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    /// Waits until the thread has returned; any number of callers, the thread is joined once.
    /// From the thread itself it detaches instead of waiting for itself.
    package func join() {
        let first = joinPhase.update { phase -> Bool in
            defer { phase = max(phase, 1) }
            return phase == 0
        }
        guard first else {
            if !isCurrent { joinPhase.wait(until: { $0 == 2 }) }
            return
        }
        if isCurrent { pthread_detach(thread) } else { pthread_join(thread, nil) }
        joinPhase.update { $0 = 2 }
    }
}
