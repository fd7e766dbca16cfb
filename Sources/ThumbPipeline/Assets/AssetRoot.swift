#if canImport(Glibc)
import Glibc
#endif
package import ThumbSystem

/// Why an asset path was refused or not found.
package enum AssetPathError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Outside the root: `..`, an absolute path, a symlink that escapes, the cache folder, a device.
    case forbidden(path: String, reason: String)
    case notFound(path: String)
    /// The daemon may not read it (EACCES, EPERM): a permission problem of this host, not of the request.
    case permissionDenied(path: String, reason: String)
    case unreadable(path: String, reason: String)

    package var description: String {
        switch self {
        case .forbidden(let path, let reason): "\(path): refused: \(reason)"
        case .notFound(let path): "\(path): no such asset"
        case .permissionDenied(let path, let reason): "\(path): permission denied: \(reason)"
        case .unreadable(let path, let reason): "\(path): \(reason)"
        }
    }
}

/// The asset folder: the only place sources are read from.
///
/// Every look-up opens the asset relative to a descriptor of the root, with `openat2`
/// (`RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, and `RESOLVE_NO_SYMLINKS` on the fast path), or —
/// for a path through a symlink, or where the kernel lacks `openat2` — a component-wise
/// `O_NOFOLLOW` walk with the same rules. The kernel refuses any step out of the root while it
/// resolves, so there is no window between a check and the open for a swapped symlink to use;
/// the version comes from `fstat` of that very descriptor. Relative symlinks that stay inside
/// the root work; absolute symlinks are refused even when they point inside (what "inside"
/// means for an absolute target changes with where the root is mounted), as is every `..`
/// that would leave the root.
package struct AssetRoot: Sendable {
    /// Absolute, symlink-free path of the root.
    package let path: String
    /// Folders under the root that are never assets (the cache, when it lives inside).
    package let excluded: [String]
    /// `excluded` relative to the root, for the folders inside it.
    let excludedInside: [String]
    /// How assets are opened (`openat2` unless forced, or missing).
    let opener: BeneathOpener

    package init(path: String, excluding excluded: [String] = []) throws(SystemError) {
        try self.init(path: path, excluding: excluded, opener: BeneathOpener())
    }

    init(path: String, excluding excluded: [String], opener: BeneathOpener) throws(SystemError) {
        let root = try Self.realPath(path)
        self.path = root
        // A folder that does not exist yet (the cache, before its first write) is kept as its
        // parent's real path plus its name.
        self.excluded = excluded.map(Self.bestRealPath)
        excludedInside = self.excluded.compactMap { folder in
            guard folder.isPath(under: root) else { return nil }
            return String(Substring(folder.utf8.dropFirst(root.utf8.count + 1)))
        }
        self.opener = opener
    }

    /// Resolves `relative` (as a client sent it) to an absolute path and its current version,
    /// without reading it (an `O_PATH` descriptor: a FIFO or a device is never opened).
    package func resolve(_ relative: String) throws(AssetPathError) -> (absolutePath: String, version: AssetVersion) {
        let opened = try open(relative, flags: ConfinedOpen.pathOnly)
        Glibc.close(opened.descriptor)
        return (path + "/" + opened.version.path, opened.version)
    }

    /// Opens `relative` for reading (`O_NONBLOCK | O_NOCTTY`: a FIFO or a terminal swapped in
    /// cannot block or adopt the caller). The caller owns the descriptor.
    package func openForReading(_ relative: String) throws(AssetPathError) -> AssetFile {
        let opened = try open(relative, flags: O_RDONLY | O_NONBLOCK | O_NOCTTY)
        return AssetFile(descriptor: opened.descriptor, version: opened.version)
    }

    /// The one open of an asset: confined resolution, `fstat`, regular-file and cache-folder checks.
    func open(_ relative: String, flags: Int32) throws(AssetPathError) -> (descriptor: Int32, version: AssetVersion) {
        let components = try Self.validatedComponents(relative)
        let rootDescriptor: Int32
        do throws(SystemError) {
            // Opened per look-up: a root moved away and back (or replaced) is the one at `path` now.
            rootDescriptor = try systemCall("open asset root \(path)") { Glibc.open(path, ConfinedOpen.pathOnly | O_DIRECTORY | O_CLOEXEC) }
        } catch {
            throw Self.refusal(error.errno, relative, error.description)
        }
        defer { Glibc.close(rootDescriptor) }
        let opened: BeneathOpener.Opened
        do throws(SystemError) {
            opened = try opener.open(components, beneath: rootDescriptor, flags: flags | O_CLOEXEC)
        } catch {
            throw Self.refusal(error.errno, relative, error.description)
        }
        do throws(AssetPathError) {
            var status = stat()
            do throws(SystemError) {
                try systemCall("fstat \(relative)") { fstat(opened.descriptor, &status) }
            } catch {
                throw Self.refusal(error.errno, relative, error.description)
            }
            guard (status.st_mode & S_IFMT) == S_IFREG else { throw .forbidden(path: relative, reason: "not a regular file") }
            guard status.st_nlink > 0 else { throw .notFound(path: relative) } // unlinked meanwhile
            let canonical = opened.canonicalPath
            if excludedInside.contains(where: { canonical.utf8.elementsEqual($0.utf8) || canonical.isPath(under: $0) }) {
                throw .forbidden(path: relative, reason: "inside the cache directory")
            }
            // Reached through a symlink: the rule for hidden names holds for the file reached too.
            if let hidden = ExactPath.components(canonical).first(where: AssetNames.isHidden) {
                throw .forbidden(path: relative, reason: "'\(hidden)' is a hidden name (starting with '.'), not an asset")
            }
            let version = AssetVersion(path: canonical, size: Int(status.st_size),
                                       modifiedNanoseconds: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                                       inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
            return (opened.descriptor, version)
        } catch {
            Glibc.close(opened.descriptor)
            throw error
        }
    }

    /// An errno of resolving or opening, as a refusal of `relative`.
    static func refusal(_ code: Int32, _ relative: String, _ detail: String) -> AssetPathError {
        switch code {
        // A name longer than the file system allows names nothing: not found, not an I/O error.
        case ENOENT, ENOTDIR, ENAMETOOLONG: .notFound(path: relative)
        case EXDEV: .forbidden(path: relative, reason: "resolves outside the asset root")
        case ELOOP: .forbidden(path: relative, reason: "too many symlinks, or a link that may not be followed")
        case EACCES, EPERM: .permissionDenied(path: relative, reason: String(cString: strerror(code)))
        case ENXIO, ENODEV, EWOULDBLOCK, EISDIR: .forbidden(path: relative, reason: "not a regular file")
        default: .unreadable(path: relative, reason: detail)
        }
    }

    /// Splits a relative path, refusing absolute paths, `.`/`..`, hidden names, empty components
    /// and NUL. One rule for hidden names everywhere: a file or folder whose name starts with
    /// `.` is not an asset (`AssetNames.isHidden`): never scanned, watched or listed, and so never
    /// served either (a `.git` folder or a `.name.tmp` being written is nobody's thumbnail).
    static func validatedComponents(_ relative: String) throws(AssetPathError) -> [Substring] {
        guard !relative.isEmpty else { throw .forbidden(path: relative, reason: "empty path") }
        guard !relative.utf8.starts(with: "/".utf8) else { throw .forbidden(path: relative, reason: "absolute paths are not allowed") }
        guard !relative.utf8.contains(0) else { throw .forbidden(path: relative, reason: "NUL in path") }
        let components = ExactPath.components(relative)
        for component in components where component.utf8.elementsEqual("..".utf8) || component.utf8.elementsEqual(".".utf8) {
            throw .forbidden(path: relative, reason: "'\(component)' is not allowed")
        }
        for component in components where AssetNames.isHidden(component) {
            throw .forbidden(path: relative, reason: "'\(component)' is a hidden name (starting with '.'), not an asset")
        }
        guard !components.isEmpty else { throw .forbidden(path: relative, reason: "empty path") }
        return components
    }

    static func realPath(_ path: String) throws(SystemError) -> String {
        guard let resolved = realpath(path, nil) else { throw SystemError(operation: "realpath \(path)", errno: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `realpath` of `path`, or of its nearest existing ancestor followed by the rest.
    static func bestRealPath(_ path: String) -> String {
        if let resolved = try? realPath(path) { return resolved }
        if !path.hasPrefix("/"), let here = try? realPath(".") { return bestRealPath(here + "/" + path) }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return path }
        let parent = bestRealPath(String(path[..<slash]))
        return parent + path[slash...]
    }
}
