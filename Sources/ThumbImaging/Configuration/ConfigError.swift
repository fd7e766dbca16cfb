import Foundation

/// A bad configuration: `key` is the JSON path of the offending value (`kinds.avatar.width`).
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var key: String
    public var reason: String

    public init(file: String, key: String, reason: String) {
        self.file = file
        self.key = key
        self.reason = reason
    }

    public var description: String {
        key.isEmpty ? "\(file): \(reason)" : "\(file): key '\(key)': \(reason)"
    }
}

/// A parsed JSON value: Foundation's JSONSerialization blurs booleans and numbers on Linux,
/// JSONDecoder does not.
enum JSONValue: Decodable, Equatable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let flag = try? container.decode(Bool.self) { self = .bool(flag) }
        else if let number = try? container.decode(Double.self) { self = .number(number) }
        else if let text = try? container.decode(String.self) { self = .string(text) }
        else if let items = try? container.decode([JSONValue].self) { self = .array(items) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    static func parse(_ data: Data, file: String) throws(ConfigError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw ConfigError(file: file, key: "", reason: "not valid JSON: \(detail ?? context.debugDescription)")
        } catch {
            throw ConfigError(file: file, key: "", reason: "not valid JSON: \(error)")
        }
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

    func fail(_ key: String, _ reason: String) -> ConfigError {
        ConfigError(file: file, key: keyPath(key), reason: reason)
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

    func positiveNumber(_ key: String) throws(ConfigError) -> Double? {
        guard let value = try number(key) else { return nil }
        guard value > 0 else { throw fail(key, "must be greater than 0") }
        return value
    }

    func nonNegativeNumber(_ key: String) throws(ConfigError) -> Double? {
        guard let value = try number(key) else { return nil }
        guard value >= 0 else { throw fail(key, "must not be negative") }
        return value
    }

    func integer(_ key: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int? {
        guard let value = try number(key) else { return nil }
        guard value == value.rounded(), value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
            throw fail(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return Int(value)
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
