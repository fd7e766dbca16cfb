#if canImport(Glibc)
import Glibc
#endif

struct UsageError: Error {
    var message: String
}

/// A small option scanner: `--name value`, `--name=value`, flags, and positional arguments
/// (everything after `--` is positional).
struct ArgumentScanner {
    private(set) var options: [(name: String, value: String?)] = []
    private(set) var positionals: [String] = []

    /// `valued` lists the options that take a value, `flags` those that do not; any other
    /// option is a usage error.
    init(_ arguments: [String], valued: Set<String>, flags: Set<String>) throws(UsageError) {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            if valued.contains(name) {
                if value == nil {
                    guard index < arguments.count else { throw UsageError(message: "\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
            } else if flags.contains(name) {
                guard value == nil else { throw UsageError(message: "\(name) takes no value") }
            } else {
                throw UsageError(message: "unknown option \(name)")
            }
            options.append((name, value))
        }
    }

    /// Every value of a repeatable option.
    func values(_ name: String) -> [String] {
        options.filter { $0.name == name }.compactMap(\.value)
    }

    /// The value of an option given at most once.
    func value(_ names: String...) throws(UsageError) -> String? {
        let found = options.filter { names.contains($0.name) }.compactMap(\.value)
        guard found.count <= 1 else { throw UsageError(message: "\(names[0]) given more than once") }
        return found.first
    }

    func flag(_ name: String) -> Bool { options.contains { $0.name == name } }

    func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = try value(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return number
    }
}

/// stdout and stderr, a line at a time.
enum Console {
    static func out(_ text: String) { write(text + "\n", to: STDOUT_FILENO) }

    static func error(_ text: String, newline: Bool = true) { write(text + (newline ? "\n" : ""), to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return } // a closed pipe: nothing more to say
            offset += count
        }
    }
}
