import Synchronization

/// Refusals of the access model, counted by route and reason for `/metrics`, and the rule that a
/// principal's refusals are logged at most once a minute (a flood of 403s must not flood the log).
package final class AccessRefusals: Sendable {
    struct State {
        var counts: [String: [String: Int]] = [:]
        /// When each principal's refusal was last logged, monotonic nanoseconds.
        var lastLogged: [String: UInt64] = [:]
    }

    static let logIntervalNanoseconds: UInt64 = 60_000_000_000
    /// Principals remembered for the log's rate limit; past it the oldest half is forgotten (a
    /// forgotten principal may be logged once more, nothing grows without bound).
    static let maxRemembered = 4096

    private let state = Mutex(State())

    /// Counts the refusal; true when it should be logged now.
    package func record(route: String, reason: String, principal: String, now: UInt64) -> Bool {
        state.withLock { state in
            state.counts[route, default: [:]][reason, default: 0] += 1
            if let last = state.lastLogged[principal], now >= last, now - last < Self.logIntervalNanoseconds { return false }
            if state.lastLogged.count >= Self.maxRemembered {
                let kept = state.lastLogged.sorted { $0.value > $1.value }.prefix(Self.maxRemembered / 2)
                state.lastLogged = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
            }
            state.lastLogged[principal] = now
            return true
        }
    }

    /// route → reason → count.
    package var counts: [String: [String: Int]] { state.withLock { $0.counts } }
}
