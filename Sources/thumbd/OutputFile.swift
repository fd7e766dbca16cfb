import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// Why an output could not be written; `exitCode` tells creation failures (73) from I/O (74).
struct OutputError: Error {
    var path: String
    var reason: String
    var exitCode: ExitCode
}

/// `thumbd render`'s outputs: replaced atomically, never left partial.
enum OutputFile {
    static func write(_ bytes: [UInt8], to path: String) throws(OutputError) {
        do {
            try AtomicFile.replace(path, with: bytes)
        } catch {
            let cannotCreate = error.operation.hasPrefix("create") || error.operation.hasPrefix("rename")
            throw OutputError(path: path, reason: error.description, exitCode: cannotCreate ? .cannotCreate : .ioError)
        }
    }
}
