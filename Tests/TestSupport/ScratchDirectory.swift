import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder of a test, `$TMPDIR/thumbd-LABEL-XXXXXX` (mkdtemp: a new name, short enough
/// for a Unix socket's path inside it), removed with everything in it by `remove()` or when the
/// value goes away. Say `defer { scratch.remove() }` where only its `path` is used afterwards:
/// Swift may release a value after its last use, not at the end of the scope.
public final class ScratchDirectory: @unchecked Sendable {
    public let path: String
    public var url: URL { URL(fileURLWithPath: path) }

    /// `permissions`: the folder's mode, 0o755 unless told (0o777 for a child that runs as
    /// another user and writes there).
    public init(_ label: String, permissions: mode_t = 0o755) throws(TestFailure) {
        let temporary = FileManager.default.temporaryDirectory.path
        var template = Array("\(temporary)/thumbd-\(label)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestFailure("cannot make a scratch folder in \(temporary): \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
        guard chmod(path, permissions) == 0 else {
            throw TestFailure("chmod \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { remove() }

    /// `relative` inside the folder.
    public func path(_ relative: String) -> String { path + "/" + relative }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}
