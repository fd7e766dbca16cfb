#if canImport(Glibc)
import Glibc
#endif

/// Why an asset path was refused or not found.
public enum AssetPathError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Outside the root: `..`, an absolute path, a symlink that escapes, the cache folder, a device.
    case forbidden(path: String, reason: String)
    case notFound(path: String)
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .forbidden(let path, let reason): "\(path): refused: \(reason)"
        case .notFound(let path): "\(path): no such asset"
        case .unreadable(let path, let reason): "\(path): \(reason)"
        }
    }
}

/// The asset folder: the only place sources are read from. Resolves client-supplied relative
/// paths, refusing anything that is not a regular file under the root.
public struct AssetRoot: Sendable {
    /// Absolute, symlink-free path of the root.
    public let path: String
    /// Folders under the root that are never assets (the cache, when it lives inside).
    public let excluded: [String]

    public init(path: String, excluding excluded: [String] = []) throws(SystemError) {
        self.path = try Self.realPath(path)
        // A folder that does not exist yet (the cache, before its first write) is kept as given.
        self.excluded = excluded.map { (try? Self.realPath($0)) ?? $0 }
    }

    /// Resolves `relative` (as a client sent it) to an absolute path and its current version.
    public func resolve(_ relative: String) throws(AssetPathError) -> (absolutePath: String, version: AssetVersion) {
        let components = try Self.validatedComponents(relative)
        let joined = path + "/" + components.joined(separator: "/")
        var status = stat()
        if lstat(joined, &status) != 0 {
            throw errno == ENOENT || errno == ENOTDIR ? .notFound(path: relative)
                : .unreadable(path: relative, reason: String(cString: strerror(errno)))
        }
        // A symlink is followed only if it lands inside the root.
        let resolved: String
        do {
            resolved = try Self.realPath(joined)
        } catch {
            throw error.errno == ENOENT ? .notFound(path: relative) : .unreadable(path: relative, reason: error.description)
        }
        guard resolved.hasPrefix(path + "/") else { throw .forbidden(path: relative, reason: "resolves outside the asset root") }
        if excluded.contains(where: { resolved == $0 || resolved.hasPrefix($0 + "/") }) {
            throw .forbidden(path: relative, reason: "inside the cache directory")
        }
        guard stat(resolved, &status) == 0 else { throw .notFound(path: relative) }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw .forbidden(path: relative, reason: "not a regular file") }
        let canonical = String(resolved.dropFirst(path.count + 1))
        let version = AssetVersion(path: canonical, size: Int(status.st_size),
                                   modifiedNanoseconds: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                                   inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
        return (resolved, version)
    }

    /// Splits a relative path, refusing absolute paths, `.`/`..`, empty components and NUL.
    static func validatedComponents(_ relative: String) throws(AssetPathError) -> [Substring] {
        guard !relative.isEmpty else { throw .forbidden(path: relative, reason: "empty path") }
        guard !relative.hasPrefix("/") else { throw .forbidden(path: relative, reason: "absolute paths are not allowed") }
        guard !relative.utf8.contains(0) else { throw .forbidden(path: relative, reason: "NUL in path") }
        let components = relative.split(separator: "/", omittingEmptySubsequences: true)
        for component in components where component == ".." || component == "." {
            throw .forbidden(path: relative, reason: "'\(component)' is not allowed")
        }
        guard !components.isEmpty else { throw .forbidden(path: relative, reason: "empty path") }
        return components
    }

    static func realPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = realpath(path, nil) else { throw SystemError(operation: "realpath \(path)", errno: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
