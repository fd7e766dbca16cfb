import CThumbWorker

/// The seccomp allow-list of the render worker (Sources/CThumbWorker/sandbox.c), by name, for
/// tests and the metrics or logs that want to say what the sandbox is.
package enum WorkerSandbox {
    /// Allowed without argument rules (recvmsg and sendmsg on the socket and tgkill of itself come on top).
    package static var allowedCalls: [String] { names(CThumb_SandboxAllowedNames()) }
    /// Refused with EPERM; anything else kills the worker.
    package static var refusedCalls: [String] { names(CThumb_SandboxRefusedNames()) }

    private static func names(_ list: UnsafePointer<UnsafePointer<CChar>?>?) -> [String] {
        var names: [String] = []
        var cursor = list
        while let name = cursor?.pointee {
            names.append(String(cString: name))
            cursor = cursor.map { $0 + 1 }
        }
        return names
    }
}
