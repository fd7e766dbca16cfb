#if canImport(Glibc)
import Glibc
#endif

/// Work to run once a delay has passed, all on one named thread (`thumbd-timers`): a request's
/// `wait` running out, a fair-share refusal sent after its pause, a parked job let go after the
/// fling debounce. The work must be short and must not wait (it answers, or takes a lock
/// briefly); it runs in deadline order, on the monotonic clock.
///
/// The thread, once started, lives as long as the process (as the timers of `shared` do).
///
/// The timers' lock is a leaf: `schedule` may be called under any other lock (the pipeline's
/// attaches a parked job under its own), and no work runs under it.
package final class DeadlineTimers: Sendable {
    /// The process's timers (their thread starts with the first `schedule`).
    package static let shared = DeadlineTimers(name: "thumbd-timers")

    private struct Timer {
        var deadlineNanoseconds: UInt64
        /// Ties go in the order scheduled.
        var sequence: UInt64
        var work: @Sendable () -> Void

        func isBefore(_ other: Timer) -> Bool {
            (deadlineNanoseconds, sequence) < (other.deadlineNanoseconds, other.sequence)
        }
    }

    private struct State {
        /// A binary min-heap by deadline: thousands of waiting requests stay cheap to add to.
        var heap: [Timer] = []
        var nextSequence: UInt64 = 0
        /// Moves on every `schedule`, so that the thread's wait looks at an earlier deadline.
        var generation: UInt64 = 0
        var thread: LongLivedThread?

        mutating func push(_ timer: Timer) {
            heap.append(timer)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].isBefore(heap[parent]) else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() -> Timer {
            heap.swapAt(0, heap.count - 1)
            let first = heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count && heap[left].isBefore(heap[smallest]) { smallest = left }
                if right < heap.count && heap[right].isBefore(heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
            return first
        }
    }

    private let name: String
    private let state = Condition(State())

    package init(name: String) {
        self.name = name
    }

    /// Runs `work` on the timers' thread once `seconds` have passed (at once for 0 or less, or
    /// not a number). If no thread can be started (a host out of threads), `work` runs on the
    /// caller's thread at once: early, never lost.
    package func schedule(afterSeconds seconds: Double, _ work: @escaping @Sendable () -> Void) {
        let bounded = seconds.isNaN ? 0 : min(max(seconds, 0), 1e6)
        let deadline = Self.nowNanoseconds() &+ UInt64(bounded * 1e9)
        let scheduled = state.update { state -> Bool in
            if state.thread == nil {
                do throws(SystemError) {
                    state.thread = try LongLivedThread.start(name: name) { [self] in run() }
                } catch {
                    return false
                }
            }
            state.push(Timer(deadlineNanoseconds: deadline, sequence: state.nextSequence, work: work))
            state.nextSequence &+= 1
            state.generation &+= 1
            return true
        }
        if !scheduled { work() }
    }

    /// Timers not run yet.
    package var pendingCount: Int { state.withLock { $0.heap.count } }

    private func run() {
        while true {
            // The next due timer, waiting for its deadline, or for a newer timer that may be earlier.
            let (due, generation, waitSeconds) = state.withLock { state -> (Timer?, UInt64, Double?) in
                guard let first = state.heap.first else { return (nil, state.generation, nil) }
                let now = Self.nowNanoseconds()
                if first.deadlineNanoseconds <= now { return (state.popFirst(), state.generation, 0) }
                return (nil, state.generation, Double(first.deadlineNanoseconds - now) / 1e9)
            }
            if let due {
                due.work()
                continue
            }
            state.wait(until: { $0.generation != generation }, timeoutSeconds: waitSeconds)
        }
    }

    static func nowNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
