import Foundation

enum CrashChild {
    /// Never outlive a parent that died.
    static let lifetimeSeconds = 30

    static func fail(_ status: Int32, _ message: String) -> Never {
        FileHandle.standardError.write(Data("thumbd-crash-child: \(message)\n".utf8))
        exit(status)
    }

    static func markReady(_ path: String) {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { fail(70, "cannot create \(path)") }
    }
}
