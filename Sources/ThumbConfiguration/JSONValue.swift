import Foundation
import ThumbImaging

/// A parsed JSON value: Foundation's JSONSerialization blurs booleans and numbers on Linux,
/// JSONDecoder does not.
public enum JSONValue: Decodable, Equatable, Sendable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
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
            return try decode(data)
        } catch {
            throw ConfigError(file: file, key: "", reason: error.reason)
        }
    }

    /// Why bytes are not a JSON document.
    public struct SyntaxError: Error, Equatable, Sendable {
        public var reason: String
    }

    /// Parses one JSON document (any value at the top). Used for configs, prefetch bodies and jobs.
    public static func decode(_ data: Data) throws(SyntaxError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            throw SyntaxError(reason: "not valid JSON: \(DisplayText.truncated(detail ?? context.debugDescription))")
        } catch {
            throw SyntaxError(reason: "not valid JSON: \(DisplayText.truncated(String(describing: error)))")
        }
    }

    /// A short name of the value's type, for messages ("a string", "true").
    public var kindDescription: String {
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
