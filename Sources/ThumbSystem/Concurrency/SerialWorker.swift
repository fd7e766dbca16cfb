/// A named thread that runs the work handed to it one item at a time, in the order handed: the
/// house's serial queue (the background reconciles, the backlog's drain, the cache's reaper, a
/// thumbnail's rewrite). The thread starts with the first item and ends once the worker is
/// closed (or goes away) and the items handed before that have run: nothing handed over is lost.
///
/// Work handed over after `close`, or when no thread can be started (a host out of threads),
/// runs on the caller's thread instead: slower, never lost.
package final class SerialWorker: Sendable {
    /// What the thread holds; the worker's `deinit` closes it (the thread does not keep the
    /// worker alive).
    private final class Line: Sendable {
        struct State {
            /// Items run are set to nil at once: what they captured (a thumbnail's bytes) is not
            /// kept until the line empties.
            var items: [(@Sendable () -> Void)?] = []
            /// The index of the next item of `items` (popped from the front without moving the rest).
            var next = 0
            var running = false
            var closed = false
            var thread: LongLivedThread?
            var hasPending: Bool { next < items.count }
        }

        let name: String
        let state = Condition(State())

        init(name: String) {
            self.name = name
        }

        /// False when the work is the caller's to run (closed, or no thread).
        func hand(_ work: @escaping @Sendable () -> Void) -> Bool {
            // Every waiter wakes: the thread, and any `waitUntilIdle` (one signal could wake the wrong one).
            state.update { state -> Bool in
                guard !state.closed else { return false }
                if state.thread == nil {
                    do throws(SystemError) {
                        state.thread = try LongLivedThread.start(name: name) { [self] in run() }
                    } catch {
                        return false
                    }
                }
                state.items.append(work)
                return true
            }
        }

        private func run() {
            while let work = state.wait(until: { $0.hasPending || $0.closed }, then: { state -> (@Sendable () -> Void)? in
                guard state.hasPending else { return nil }
                let work = state.items[state.next]
                state.items[state.next] = nil
                state.next += 1
                if state.next == state.items.count {
                    state.items.removeAll(keepingCapacity: true)
                    state.next = 0
                }
                state.running = true
                return work
            }) ?? nil {
                work()
                state.update { $0.running = false }
            }
        }

        func close() -> LongLivedThread? {
            state.update { state in
                state.closed = true
                return state.thread
            }
        }
    }

    private let line: Line

    /// `name`: the thread's (at most 15 bytes: `thumbd-backlog`).
    package init(name: String) {
        line = Line(name: name)
    }

    deinit { line.close()?.detach() }

    /// Runs `work` on the worker's thread after what was handed before it.
    package func submit(_ work: @escaping @Sendable () -> Void) {
        if !line.hand(work) { work() }
    }

    /// Waits until everything handed over so far has run (at once from the worker's own thread,
    /// which would wait for itself).
    package func waitUntilIdle() {
        if line.state.withLock({ $0.thread?.isCurrent ?? false }) { return }
        line.state.wait(until: { !$0.hasPending && !$0.running })
    }

    /// Takes no more work (later items run on their caller's thread); the thread ends once what
    /// it holds has run. `joining`: and waits for that.
    package func close(joining: Bool) {
        let thread = line.close()
        if joining { thread?.join() } else { thread?.detach() }
    }
}
