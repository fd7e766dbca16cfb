import Dispatch
import Synchronization
import ThumbSystem
import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// What the main loop waits for: signals (taken by one waiting thread, since every thread
/// blocks them) and the start-up's steps (which run off the main thread, so that a SIGTERM is
/// honoured while the index opens or the first reconcile runs). One queue and a semaphore: the
/// loop waits on it with the watchdog's deadline, nothing polls.
final class DaemonEvents: Sendable {
    enum Event: Sendable {
        case signal(Int32)
        /// The pipeline is open and the listeners serve.
        case serving(DaemonServices)
        /// Start-up failed with this exit status (logged already).
        case failed(Daemon.Exit)
        /// Start-up saw the stop request and undid what it had done.
        case stoppedEarly
    }

    private let queue = Mutex<[Event]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func post(_ event: Event) {
        queue.withLock { $0.append(event) }
        arrived.signal()
    }

    /// The next event, or nil when `timeoutSeconds` pass first.
    func next(timeoutSeconds: Double) -> Event? {
        guard arrived.wait(timeout: .now() + timeoutSeconds) == .success else { return nil }
        return queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    /// Takes the blocked `signals` from now on, on a thread of its own that only waits in
    /// `sigwaitinfo` (the process exits under it).
    func takeSignals(_ signals: sigset_t) throws(SystemError) {
        try LongLivedThread.detach(name: "thumbd-signals") { [self] in
            var set = signals
            while true {
                let signal = sigwaitinfo(&set, nil)
                if signal > 0 { post(.signal(signal)) }  // -1 is EINTR: wait again
            }
        }
    }
}

/// Test hooks of start-up, from `THUMBD_TEST_HOLD=open|reconcile` (never set in production):
/// start-up waits before opening the cache, or the background reconcile waits before it starts,
/// until SIGUSR2 (or a stop). Tests use it to see what the daemon does meanwhile.
struct StartupHold: Sendable {
    enum Point: String, Sendable { case open, reconcile }
    let point: Point
    let gate = ReconcileGate(held: true)

    init?(environment: [String: String]) {
        guard let text = environment["THUMBD_TEST_HOLD"], let point = Point(rawValue: text) else { return nil }
        self.point = point
    }
}
