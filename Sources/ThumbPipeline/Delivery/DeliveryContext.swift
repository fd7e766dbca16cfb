#if canImport(Glibc)
import Glibc
#endif

/// What one thread's delivery loop (`DeliveryGate.deliver`) knows while it runs completions: the
/// stripe it holds, the answers that pipeline calls made from inside those completions decided
/// (delivered by the loop after the completion returned, so that no completion ever waits for
/// a stripe), and the stripes those calls could not pass at once.
///
/// Kept in a POSIX thread-specific slot rather than a task-local: a task-local is inherited by
/// tasks a completion starts, which run on other threads and must not think they deliver.
/// Only its own thread ever reads or writes it.
final class DeliveryContext {
    var heldStripe: Int?
    var pending: [(Answers.Delivery, DeliveryGate.Admit)] = []
    var passLater: [Int] = []

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Fails only when the process ran out of keys (PTHREAD_KEYS_MAX, 1024): at startup, not on input.
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// The context of the delivery loop running on this thread, if one is.
    static var current: DeliveryContext? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<DeliveryContext>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The caller keeps the context alive until `leave`.
    func enter() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    func leave() {
        pthread_setspecific(Self.key, nil)
    }
}
