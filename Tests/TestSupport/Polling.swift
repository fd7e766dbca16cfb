import Foundation

/// Waits for something another thread or process does, checking every `interval` until
/// `condition` holds or `timeout` passes; true when it held. Tests poll only what has no event
/// to wait on (a file another process writes, a counter a background queue bumps).
public func eventually(timeout: Duration = .seconds(20), interval: Duration = .milliseconds(10),
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
    return true
}

/// The same for tests that run outside Swift concurrency (child processes, sockets).
public func poll(timeout: Duration, interval: Duration = .milliseconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
    }
    return true
}
