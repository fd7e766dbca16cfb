#if canImport(Glibc)
import Glibc
#endif

/// Why an output could not be written; `exitCode` tells creation failures (73) from I/O (74).
struct OutputError: Error {
    var path: String
    var reason: String
    var exitCode: ExitCode
}

/// Writes a whole file atomically: a temporary name in the same folder, fsync, rename.
/// A crash or error leaves either the old file or the complete new one, never a partial one.
enum OutputFile {
    static func write(_ bytes: [UInt8], to path: String) throws(OutputError) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[..<$0]) } ?? "."
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(folder.isEmpty ? "/" : folder)/.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw OutputError(path: path, reason: "cannot create: \(String(cString: strerror(errno)))", exitCode: .cannotCreate)
        }
        var written = 0
        var failure: String?
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    failure = "cannot write: \(String(cString: strerror(errno)))"
                    return
                }
                written += count
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = "cannot sync: \(String(cString: strerror(errno)))" }
        if close(descriptor) != 0, failure == nil { failure = "cannot close: \(String(cString: strerror(errno)))" }
        if failure == nil, rename(temporary, path) != 0 { failure = "cannot rename into place: \(String(cString: strerror(errno)))" }
        if let failure {
            unlink(temporary)
            throw OutputError(path: path, reason: failure, exitCode: .ioError)
        }
    }
}
