#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// Where the pipeline reports what an operator must know and no request shows: an index
/// rebuilt (and what it dropped), cache writes failing and recovering, a removed cache folder
/// recreated, the watcher losing and re-arming the asset root, lost watch events. Once per
/// episode, never per request. The daemon sends it to its log (syslog priorities for journald);
/// the default writes plain lines to stderr.
public struct PipelineLog: Sendable {
    public enum Level: Int, Sendable, CustomStringConvertible {
        case warning = 4, notice = 5, info = 6

        public var description: String {
            switch self {
            case .warning: "warning"
            case .notice: "notice"
            case .info: "info"
            }
        }
    }

    private let sink: @Sendable (Level, String) -> Void

    public init(_ sink: @escaping @Sendable (Level, String) -> Void) {
        self.sink = sink
    }

    public func warning(_ message: String) { sink(.warning, message) }
    public func notice(_ message: String) { sink(.notice, message) }
    public func info(_ message: String) { sink(.info, message) }

    /// "thumbd: warning: …" lines on stderr.
    public static let standardError = PipelineLog { level, message in
        let bytes = Array("thumbd: \(level): \(message.replacingNewlines)\n".utf8)
        var offset = 0
        while offset < bytes.count {
            guard let written = try? systemCall("write stderr", { bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) } }),
                  written > 0 else { return }
            offset += written
        }
    }

    /// Nothing (benchmarks).
    public static let discard = PipelineLog { _, _ in }
}

extension String {
    /// One event per line: a newline inside a message (a file name, say) would split it.
    var replacingNewlines: String { String(map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
}
