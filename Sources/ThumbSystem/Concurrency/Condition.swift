#if canImport(Glibc)
import Glibc
#endif

/// A value and a condition variable on its lock: a thread waits until the value says what it
/// waits for (a count reached zero, a queue has room, a stop was asked), and whoever changes
/// the value wakes the waiters. The house's one way to wait for something another thread does:
/// nothing sleeps and looks again where there is an event to wait on.
package final class Condition<Value>: @unchecked Sendable {
    private let lock = PThreadLock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a wall-clock step neither shortens nor stretches a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Reads or changes the value without waking anyone (a change nobody waits for).
    package func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.withLock { body(&value) }
    }

    /// Changes the value and wakes every waiter, which then looks at it again; `wakingAll`
    /// false wakes one (the change is for one waiter, and any of them will do).
    package func update<Result>(wakingAll: Bool = true, _ body: (inout Value) -> Result) -> Result {
        lock.withLock {
            defer {
                if wakingAll { pthread_cond_broadcast(condition) } else { pthread_cond_signal(condition) }
            }
            return body(&value)
        }
    }

    /// Waits until `isDone(value)` holds, then runs `body` on the value under the same hold.
    /// `timeoutSeconds` nil waits for ever; otherwise nil is returned when it passed first.
    package func wait<Result>(until isDone: (Value) -> Bool, timeoutSeconds: Double? = nil,
                              then body: (inout Value) -> Result) -> Result? {
        let deadline = timeoutSeconds.map(Self.deadline(afterSeconds:))
        return lock.withLock { () -> Result? in
            while !isDone(value) {
                if var deadline {
                    // ETIMEDOUT, or a spurious wake-up: the loop looks at the value again either way.
                    if pthread_cond_timedwait(condition, lock.mutex, &deadline) == ETIMEDOUT && !isDone(value) { return nil }
                } else {
                    pthread_cond_wait(condition, lock.mutex)
                }
            }
            return body(&value)
        }
    }

    /// Waits until `isDone(value)` holds; false when `timeoutSeconds` passed first.
    @discardableResult
    package func wait(until isDone: (Value) -> Bool, timeoutSeconds: Double? = nil) -> Bool {
        wait(until: isDone, timeoutSeconds: timeoutSeconds) { _ in () } != nil
    }

    static func deadline(afterSeconds seconds: Double) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        // Bounded so that no caller's number (a config value, a NaN) can overflow the conversion.
        let bounded = seconds.isNaN ? 0 : min(max(seconds, 0), 1e9)
        let whole = Int(bounded)
        var nanoseconds = Int(now.tv_nsec) + Int((bounded - Double(whole)) * 1e9)
        var secondsPart = Int(now.tv_sec) + whole
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            secondsPart += 1
        }
        return timespec(tv_sec: secondsPart, tv_nsec: nanoseconds)
    }
}
