#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import Synchronization
package import ThumbPipeline
import ThumbSystem
import ThumbWorker

/// One event per line on stderr, or one journal entry. `journal` (the default when stderr is
/// journald's stream, `$JOURNAL_STREAM`): the native protocol (`sd_journal_sendv(3)`), with the
/// event's `LogFields` as `THUMBD_ASSET=`, `THUMBD_KIND=`, `THUMBD_CLIENT=` and `THUMBD_EVENT=`,
/// so that `journalctl -u thumbd THUMBD_ASSET=photos/a.jpg` finds an asset's renders. `text`
/// (the default elsewhere): prefixed `<N>` with its syslog priority (journald files a stream's
/// lines at that level). `json` (`--log-format json`, for a collector outside systemd): one
/// JSON object a line, `time` (UTC, RFC 3339 with microseconds), `priority` (syslog's
/// number), `level`, `message`, and `asset`, `kind`, `client`, `event` when the event has them.
package enum Log {
    package enum Priority: Int, Sendable {
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

    package enum Format: Int, Sendable, CaseIterable {
        case text, json, journal

        /// `--log-format`'s words.
        package init?(name: String) {
            switch name {
            case "text": self = .text
            case "json": self = .json
            case "journal": self = .journal
            default: return nil
            }
        }

        /// Journal when stderr is journald's stream (systemd's `JOURNAL_STREAM`, "device:inode"
        /// of that stream: a redirected stderr no longer matches), text otherwise.
        package static func automatic(environment: [String: String]) -> Format {
            guard let stream = environment["JOURNAL_STREAM"] else { return .text }
            var status = stat()
            guard fstat(STDERR_FILENO, &status) == 0 else { return .text }
            return stream == "\(status.st_dev):\(status.st_ino)" ? .journal : .text
        }
    }

    private static let chosenFormat = Atomic<Int>(Format.text.rawValue)

    /// Set once at start-up, before the first event. Render workers write plain text to a pipe
    /// of the daemon's, relayed here (`WorkerStderr`) in this format.
    package static func use(_ format: Format) {
        chosenFormat.store(format.rawValue, ordering: .relaxed)
        WorkerStderr.use { line in Log.warning(line) }
    }

    package static func error(_ message: String, _ fields: LogFields = LogFields()) { write(.error, message, fields) }
    package static func warning(_ message: String, _ fields: LogFields = LogFields()) { write(.warning, message, fields) }
    package static func notice(_ message: String, _ fields: LogFields = LogFields()) { write(.notice, message, fields) }
    package static func info(_ message: String, _ fields: LogFields = LogFields()) { write(.info, message, fields) }

    package static func write(_ priority: Priority, _ message: String, _ fields: LogFields = LogFields()) {
        let format = Format(rawValue: chosenFormat.load(ordering: .relaxed)) ?? .text
        if format == .journal, sendToJournal(priority, message, fields) { return }
        var bytes = Array(line(priority, message, fields, format: format).utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// The event's line, newline included (text, and journal when journald cannot be reached).
    static func line(_ priority: Priority, _ message: String, _ fields: LogFields = LogFields(), format: Format) -> String {
        switch format {
        case .text, .journal:
            // A newline would split the event, a CR or ESC rewrite what the terminal shows.
            "<\(priority.rawValue)>" + JSONLines.textLine(message) + "\n"
        case .json:
            JSONLines.event(priority: priority.rawValue, level: priority.name, message: message, members: fields.jsonMembers)
        }
    }

    /// One journal entry: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and the event's fields. False
    /// when journald refused it (the caller writes a line instead).
    static func sendToJournal(_ priority: Priority, _ message: String, _ fields: LogFields) -> Bool {
        // A value with a newline is sent in the protocol's binary-safe form by libsystemd itself.
        let entries = [("MESSAGE", message), ("PRIORITY", String(priority.rawValue)), ("SYSLOG_IDENTIFIER", "thumbd")]
            + fields.journalFields
        // One buffer holding every "NAME=value"; the iovecs point into it.
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        for (name, value) in entries {
            let start = bytes.count
            bytes += Array("\(name)=\(value)".utf8)
            ranges.append(start..<bytes.count)
        }
        return bytes.withUnsafeMutableBytes { buffer in
            let vectors = ranges.map { iovec(iov_base: buffer.baseAddress! + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) } >= 0
        }
    }
}
