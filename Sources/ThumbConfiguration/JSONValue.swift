package import Foundation
import ThumbImaging

/// A parsed JSON value (`JSONParser`: duplicate keys refused, `-0` is `0`).
package enum JSONValue: Equatable, Sendable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    static func parse(_ data: Data, file: String) throws(ConfigError) -> JSONValue {
        do {
            return try decode(data)
        } catch {
            throw ConfigError(file: file, key: "", reason: error.reason)
        }
    }

    /// Why bytes are not a JSON document.
    package struct SyntaxError: Error, Equatable, Sendable {
        package var reason: String
    }

    /// Parses one JSON document (any value at the top). Used for configs, request bodies and jobs.
    package static func decode(_ data: Data) throws(SyntaxError) -> JSONValue {
        try JSONParser.parse(Array(data))
    }

    /// A short name of the value's type, for messages ("a string", "true").
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .number(let number): JSONFields.format(number)
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
