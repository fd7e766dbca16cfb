#if canImport(Glibc)
import Glibc
#endif

/// A mutex that can be taken in one scope and released in another, and tried without waiting:
/// what `Synchronization.Mutex` cannot do. `DeliveryGate` takes a slot's stripe under the
/// pipeline's lock without waiting and releases it after the completion ran, outside it.
/// The one pthread mutex of the package, with the condition that waits on it (`Condition`).
package final class PThreadLock: @unchecked Sendable {
    let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // Fails only without memory for a default mutex (EAGAIN, ENOMEM): at start, not on input.
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() {
        pthread_mutex_lock(mutex)
    }

    /// Takes the lock if nobody holds it; false (and nothing held) otherwise.
    package func tryLock() -> Bool {
        pthread_mutex_trylock(mutex) == 0
    }

    package func unlock() {
        pthread_mutex_unlock(mutex)
    }

    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
