#if canImport(Glibc)
import Glibc
#endif

/// One event per line on stderr, prefixed `<N>` with its syslog priority so that journald files
/// it at the right level.
public enum Log {
    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    public static func error(_ message: String) { write(.error, message) }
    public static func warning(_ message: String) { write(.warning, message) }
    public static func notice(_ message: String) { write(.notice, message) }
    public static func info(_ message: String) { write(.info, message) }

    public static func write(_ priority: Priority, _ message: String) {
        // Newlines inside a message would split the event.
        let line = "<\(priority.rawValue)>" + message.replacingOccurrences(of: "\n", with: " ") + "\n"
        var bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
