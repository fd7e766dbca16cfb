#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: what was attempted and the errno it gave.
package struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    package var operation: String
    package var errno: Int32

    package init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    package var description: String { "\(operation): \(String(cString: strerror(errno)))" }
}

/// Every system call of the pipeline goes through here: retried on EINTR, and a failure
/// (a negative result) becomes a `SystemError` naming the operation.
@discardableResult
@inline(__always)
package func systemCall<Result: BinaryInteger>(_ operation: @autoclosure () -> String,
                                       _ call: () -> Result) throws(SystemError) -> Result {
    while true {
        let result = call()
        if result >= 0 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw SystemError(operation: operation(), errno: code)
    }
}
