#if canImport(Glibc)
package import Glibc
#endif

/// JSON text written by hand: where a serializer would cost more than the answer (a screen's
/// placeholders), and the JSON log lines of the daemon and its workers (`--log-format json`),
/// which must not allocate a dictionary per event.
package enum JSONLines {
    /// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259 §7).
    package static func string(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// One log event as a JSON object on one line (newline included): `time` (UTC, RFC 3339
    /// with microseconds), `priority` (syslog's number), `level`, `message`, then `members`
    /// (string values: what the event is about).
    package static func event(priority: Int, level: String, message: String, members: [(String, String)] = []) -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var line = #"{"time":"\#(rfc3339(time))","priority":\#(priority),"level":"\#(level)","message":"# + string(message)
        for (key, value) in members { line += "," + string(key) + ":" + string(value) }
        return line + "}\n"
    }

    /// `2026-12-03T13:12:00.123456Z`.
    package static func rfc3339(_ time: timespec) -> String {
        var seconds = time.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(parts.tm_year) + 1900, 4))-\(padded(Int(parts.tm_mon) + 1, 2))-\(padded(Int(parts.tm_mday), 2))"
            + "T\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))"
            + ".\(padded(Int(time.tv_nsec) / 1000, 6))Z"
    }

    /// A message made safe for a text log line read in a terminal: a newline becomes a space
    /// (one event, one line) and every other control character (C0, DEL, C1: CR, ESC, CSI) a
    /// visible `\xNN`, so that an asset name or client id cannot rewrite the line it is on, forge
    /// a `<0>` line of its own or clear the operator's screen.
    package static func textLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            if scalar == "\n" {
                out += " "
            } else if isControl(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" : "") + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
