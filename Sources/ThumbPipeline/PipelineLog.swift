#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// Where the pipeline reports what an operator must know and no request shows: an index
/// rebuilt (and what it dropped), cache writes failing and recovering, a removed cache folder
/// recreated, the watcher losing and re-arming the asset root, lost watch events: once per
/// episode, never per request. And, when `PipelineConfiguration.logsRenders` (the daemon), one
/// event per render, with the fields that find it (`LogFields`). The daemon sends it to its log (syslog priorities for journald);
/// the default writes plain lines to stderr.
package struct PipelineLog: Sendable {
    package enum Level: Int, Sendable, CustomStringConvertible {
        case warning = 4, notice = 5, info = 6

        package var description: String {
            switch self {
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            }
        }
    }

    private let sink: @Sendable (Level, String, LogFields) -> Void

    /// A sink that keeps the events' fields (the daemon's journal and JSON lines).
    package init(fields sink: @escaping @Sendable (Level, String, LogFields) -> Void) {
        self.sink = sink
    }

    /// A sink of messages only.
    package init(_ sink: @escaping @Sendable (Level, String) -> Void) {
        self.sink = { level, message, _ in sink(level, message) }
    }

    package func warning(_ message: String, _ fields: LogFields = LogFields()) { sink(.warning, message, fields) }
    package func notice(_ message: String, _ fields: LogFields = LogFields()) { sink(.notice, message, fields) }
    package func info(_ message: String, _ fields: LogFields = LogFields()) { sink(.info, message, fields) }

    /// "thumbd: warning: …" lines on stderr.
    package static let standardError = PipelineLog { level, message in
        let bytes = Array("thumbd: \(level): \(JSONLines.textLine(message))\n".utf8)
        var offset = 0
        while offset < bytes.count {
            guard let written = try? systemCall("write stderr", { bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) } }),
                  written > 0 else { return }
            offset += written
        }
    }

    /// Nothing (benchmarks).
    package static let discard = PipelineLog { _, _ in }
}

/// What an event is about, for filtering a log by it: journald fields (`THUMBD_ASSET=` …, see
/// `journalFields`), keys of a JSON line. Empty fields are left out.
package struct LogFields: Sendable, Equatable {
    /// The asset's path below the asset root.
    package var asset: String?
    /// The kind and scale rendered, "contact-avatar@3x".
    package var kind: String?
    /// The clients (a slot's `client`) whose requests waited for it, comma-separated.
    package var client: String?
    /// What happened, one word: `rendered`, `render-failed`.
    package var event: String?

    package init(asset: String? = nil, kind: String? = nil, client: String? = nil, event: String? = nil) {
        self.asset = asset
        self.kind = kind
        self.client = client
        self.event = event
    }

    /// (journal field, value) pairs: THUMBD_ASSET, THUMBD_KIND, THUMBD_CLIENT, THUMBD_EVENT.
    package var journalFields: [(String, String)] {
        [("THUMBD_ASSET", asset), ("THUMBD_KIND", kind), ("THUMBD_CLIENT", client), ("THUMBD_EVENT", event)]
            .compactMap { name, value in value.flatMap { $0.isEmpty ? nil : (name, $0) } }
    }

    /// (JSON key, value) pairs: asset, kind, client, event.
    package var jsonMembers: [(String, String)] {
        [("asset", asset), ("kind", kind), ("client", client), ("event", event)]
            .compactMap { name, value in value.flatMap { $0.isEmpty ? nil : (name, $0) } }
    }
}
