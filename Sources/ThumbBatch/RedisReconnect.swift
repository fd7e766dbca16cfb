import Foundation
import Synchronization
package import ThumbPipeline

/// What a queue consumer did, for `/metrics` and systemd's STATUS: read from any thread.
package final class RedisQueueCounters: Sendable {
    package struct Snapshot: Sendable, Equatable {
        package var rendered = 0
        package var failed = 0
        package var deadLettered = 0
        package var takenOver = 0
        package var reconnects = 0
        /// Entries of the stream not yet delivered to the group (Redis 7's XINFO GROUPS lag);
        /// nil until sampled, or when Redis cannot tell.
        package var lag: Int?
        package var pending = 0
        /// Whether the connection is up now.
        package var connected = true
    }

    private let state = Mutex(Snapshot())

    package init() {}

    package var snapshot: Snapshot { state.withLock { $0 } }

    func add(_ counter: WritableKeyPath<Snapshot, Int>, _ amount: Int = 1) {
        state.withLock { $0[keyPath: counter] += amount }
    }

    func setBacklog(lag: Int?, pending: Int) {
        state.withLock {
            $0.lag = lag
            $0.pending = pending
        }
    }

    func setConnected(_ connected: Bool) {
        state.withLock { $0.connected = connected }
    }

}

extension RedisQueueCounters.Snapshot {
    /// One line for systemd's STATUS=.
    package var statusLine: String {
        "\(rendered) rendered, \(failed) failed, \(deadLettered) dead, lag \(lag.map(String.init) ?? "?"), pending \(pending)"
            + (connected ? "" : ", reconnecting")
    }
}

/// The reconnect policy of a queue follower: capped exponential backoff with jitter, one log
/// line when the connection is lost and one when it is back (with how long it was gone and how
/// many tries it took), and the count of episodes.
struct RedisReconnect {
    /// The first wait, and the cap: a Redis restart (a few seconds) is met within a second
    /// or two of its return, and a long outage costs one try every 10 s per consumer.
    static let firstDelaySeconds = 0.1
    static let maxDelaySeconds = 10.0

    /// A connection lost again sooner than this after it came back continues the last
    /// episode's backoff: a Redis (or a proxy before it) that accepts and then drops connections
    /// is tried ever more slowly, not every 0.1 s.
    static let stableSeconds = 30.0

    let counters: RedisQueueCounters
    private var lostAt: ContinuousClock.Instant?
    private var restoredAt: ContinuousClock.Instant?
    /// Tries since the backoff last started over (the exponent), and in this episode (logged).
    private var attempts = 0
    private var episodeAttempts = 0
    private var lastError = ""
    private var generator = SystemRandomNumberGenerator()

    init(counters: RedisQueueCounters) {
        self.counters = counters
    }

    /// The connection failed (or, `starting`, the first one could not be made): an episode
    /// starts (logged once; counted when a connection was lost).
    mutating func lost(_ error: RedisError, log: PipelineLog?, address: RedisQueue.Address, starting: Bool = false) {
        guard lostAt == nil else { return failedAgain(error) }
        lostAt = .now
        if restoredAt.map({ ContinuousClock.now - $0 >= .seconds(Self.stableSeconds) }) ?? true { attempts = 0 }
        episodeAttempts = 0
        lastError = error.description
        if !starting { counters.add(\.reconnects) }
        counters.setConnected(false)
        log?.warning("queue \(address.description): " + (starting ? "Redis is not reachable yet" : "connection lost")
                     + " (\(error)); " + (starting ? "connecting" : "reconnecting") + " with backoff")
    }

    mutating func failedAgain(_ error: RedisError) {
        lastError = error.description
    }

    /// How long to wait before the next try: "equal jitter" over the capped exponential (a
    /// random point in its upper half: 0.1, 0.2, 0.4 … 10 s), so that a fleet of consumers does
    /// not reconnect in step and none retries much sooner than the curve says.
    mutating func nextDelaySeconds() -> Double {
        let ceiling = min(Self.maxDelaySeconds, Self.firstDelaySeconds * pow(2, Double(min(attempts, 20))))
        attempts += 1
        episodeAttempts += 1
        return Double.random(in: (ceiling / 2)...ceiling, using: &generator)
    }

    /// The connection is back: the episode ends (logged once, with its length).
    mutating func restored(log: PipelineLog?, address: RedisQueue.Address) {
        guard lostAt != nil else { return }
        let seconds = lostAt.map { (ContinuousClock.now - $0) / .seconds(1) } ?? 0
        log?.notice("queue \(address.description): connected after \(String(format: "%.1f", seconds)) s and \(episodeAttempts) "
                    + "attempt(s) (last error: \(lastError))")
        lostAt = nil
        restoredAt = .now
        counters.setConnected(true)
    }
}
