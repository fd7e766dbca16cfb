#if canImport(Glibc)
import Glibc
#endif
import CSystemd

/// The service manager's notification protocol, through libsystemd (`sd_notify(3)`). Does
/// nothing when not started by a service manager.
package struct SystemdNotifier: Sendable {
    package let isActive: Bool

    package init(environment: [String: String]) {
        isActive = environment["NOTIFY_SOCKET"].map { !$0.isEmpty } ?? false
    }

    /// The watchdog interval systemd expects pings within, if any (`sd_watchdog_enabled(3)`:
    /// WATCHDOG_USEC, when WATCHDOG_PID is absent or this process).
    package static func watchdogInterval() -> Double? {
        var micros: UInt64 = 0
        guard sd_watchdog_enabled(0, &micros) > 0, micros > 0 else { return nil }
        return Double(micros) / 1_000_000
    }

    /// Sends `state` (e.g. "READY=1\nSTATUS=serving"). Failures are logged, never fatal.
    package func notify(_ state: String) {
        guard isActive else { return }
        let status = sd_notify(0, state)
        if status < 0 { Log.warning("sd_notify failed: \(String(cString: strerror(-status)))") }
    }
}
