#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ThumbSystem

/// One event per line on stderr. `text` (the default): prefixed `<N>` with its syslog priority,
/// so that journald files it at the right level. `json` (`thumbd serve --log-format json`, for a
/// collector outside systemd): one JSON object a line, `time` (UTC, RFC 3339 with microseconds),
/// `priority` (syslog's number), `level` and `message` (`JSONLines.event`).
public enum Log {
    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7

        var name: String {
            switch self {
            case .error: "error"
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            case .debug: "debug"
            }
        }
    }

    public enum Format: Int, Sendable, CaseIterable {
        case text, json

        /// `--log-format`'s words.
        public init?(name: String) {
            switch name {
            case "text": self = .text
            case "json": self = .json
            default: return nil
            }
        }
    }

    private static let chosenFormat = Atomic<Int>(Format.text.rawValue)

    /// Set once at start-up, before the first event; the render workers started after it log
    /// the same way (`JSONLines.formatVariable` in their environment).
    public static func use(_ format: Format) {
        chosenFormat.store(format.rawValue, ordering: .relaxed)
        if format == .json { setenv(JSONLines.formatVariable, "json", 1) } else { unsetenv(JSONLines.formatVariable) }
    }

    public static func error(_ message: String) { write(.error, message) }
    public static func warning(_ message: String) { write(.warning, message) }
    public static func notice(_ message: String) { write(.notice, message) }
    public static func info(_ message: String) { write(.info, message) }

    public static func write(_ priority: Priority, _ message: String) {
        let format = Format(rawValue: chosenFormat.load(ordering: .relaxed)) ?? .text
        var bytes = Array(line(priority, message, format: format).utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// The event's line, newline included.
    static func line(_ priority: Priority, _ message: String, format: Format) -> String {
        switch format {
        case .text:
            // Newlines inside a message would split the event.
            "<\(priority.rawValue)>" + message.replacingOccurrences(of: "\n", with: " ") + "\n"
        case .json:
            JSONLines.event(priority: priority.rawValue, level: priority.name, message: message)
        }
    }
}
