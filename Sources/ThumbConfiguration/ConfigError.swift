import Foundation
import ThumbImaging

/// A bad configuration: `key` is the JSON path of the offending value (`kinds.avatar.width`).
package struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    package var file: String
    package var key: String
    package var reason: String

    package init(file: String, key: String, reason: String) {
        self.file = file
        self.key = key
        self.reason = reason
    }

    package var description: String {
        key.isEmpty ? "\(file): \(reason)" : "\(file): key '\(key)': \(reason)"
    }
}

/// Typed, path-aware access to one JSON object, so every error names its key.
struct JSONFields {
    let object: [String: JSONValue]
    let path: String
    let file: String

    init(_ value: JSONValue, path: String, file: String) throws(ConfigError) {
        guard case .object(let object) = value else {
            throw ConfigError(file: file, key: path, reason: "must be an object")
        }
        self.object = object
        self.path = path
        self.file = file
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// An error about `key` of this object; an empty `key` names the object itself.
    func fail(_ key: String, _ reason: String) -> ConfigError {
        ConfigError(file: file, key: key.isEmpty ? path : keyPath(DisplayText.truncated(key, maxBytes: 100)), reason: reason)
    }

    /// Refuses keys this object does not know: a typo must not be silently ignored.
    func allowOnly(_ known: Set<String>) throws(ConfigError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail(unknown, "unknown key (expected one of: \(known.sorted().joined(separator: ", ")))")
        }
    }

    func number(_ key: String) throws(ConfigError) -> Double? {
        guard let value = object[key] else { return nil }
        guard case .number(let number) = value, number.isFinite else { throw fail(key, "must be a number") }
        return number
    }

    /// A number in `range` (`unit` names what it counts, for the message).
    func number(_ key: String, in range: ClosedRange<Double>, unit: String) throws(ConfigError) -> Double? {
        guard let value = try number(key) else { return nil }
        guard range.contains(value) else {
            throw fail(key, "must be a number of \(unit) from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound)), "
                       + "got \(Self.format(value))")
        }
        return value
    }

    /// A number above 0 and at most `maximum`.
    func positiveNumber(_ key: String, atMost maximum: Double, unit: String) throws(ConfigError) -> Double? {
        guard let value = try number(key) else { return nil }
        guard value > 0 && value <= maximum else {
            throw fail(key, "must be a number of \(unit) more than 0 and at most \(Self.format(maximum)), got \(Self.format(value))")
        }
        return value
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let value = try number(key) else { return nil }
        guard let whole = CheckedConversion.wholeNumber(value, in: range) else {
            throw fail(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(Self.format(value))")
        }
        return whole
    }

    /// A number for a message: whole numbers without a fraction, others as Swift prints them.
    static func format(_ value: Double) -> String {
        CheckedConversion.wholeNumber(value, in: -(1 << 53)...(1 << 53)).map(String.init) ?? "\(value)"
    }

    func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let flag) = value else { throw fail(key, "must be true or false") }
        return flag
    }

    func string(_ key: String) throws(ConfigError) -> String? {
        guard let value = object[key] else { return nil }
        guard case .string(let text) = value else { throw fail(key, "must be a string") }
        return text
    }

    func fields(_ key: String) throws(ConfigError) -> JSONFields? {
        guard let value = object[key] else { return nil }
        return try JSONFields(value, path: keyPath(key), file: file)
    }

    func array(_ key: String) throws(ConfigError) -> [JSONValue]? {
        guard let value = object[key] else { return nil }
        guard case .array(let items) = value else { throw fail(key, "must be an array") }
        return items
    }
}
