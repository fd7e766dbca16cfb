#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// What a scan found: the assets, and the folders it could not read (whose assets are then
/// missing from `versions` — a reconciliation must not take that as "deleted").
public struct AssetScan: Sendable, Equatable {
    /// A folder (or the root, path "") that could not be listed, or a file that could not be stat'ed.
    public struct Failure: Sendable, Equatable, CustomStringConvertible {
        /// Relative to the asset root; "" is the root itself.
        public var path: String
        public var error: SystemError
        public var description: String { "\(path.isEmpty ? "." : path): \(error)" }
    }

    /// Regular image files, sorted by path.
    public var versions: [AssetVersion]
    public var failures: [Failure]

    /// Whether `path` (relative) lies in a folder the scan could not read, so its absence from
    /// `versions` means nothing.
    public func isUncertain(_ path: String) -> Bool {
        failures.contains { $0.path.isEmpty || path == $0.path || path.hasPrefix($0.path + "/") }
    }
}

/// Walks the asset root to reconcile it with the cache at start (and after a `.rescan`).
///
/// Counted: regular files (not symlinks — `lstat`) with an image extension (.jpg .jpeg .png
/// .webp .gif .heic .heif .avif, any case), or without an extension and an image's first
/// bytes, at any depth. Skipped: hidden names (files and folders starting with '.', such as
/// `.name.tmp` being written), the root's `excluded` folders, symlinked folders (never
/// followed), names that are not valid UTF-8.
public enum AssetScanner {
    /// The image files under the root, sorted by path. Unreadable folders are silently skipped;
    /// use `scanReportingFailures` when they matter.
    public static func scan(_ root: AssetRoot) -> [AssetVersion] {
        scanReportingFailures(root).versions
    }

    /// The image files under the root (or under its relative folder `folder`), sorted by path,
    /// with every folder that could not be read.
    public static func scanReportingFailures(_ root: AssetRoot, under folder: String = "") -> AssetScan {
        var versions: [AssetVersion] = []
        var failures: [AssetScan.Failure] = []
        var pending = [folder]
        while let relative = pending.popLast() {
            let absolute = AssetNames.absolute(relative, in: root)
            let entries: [DirectoryEntry]
            do {
                entries = try listDirectory(absolute)
            } catch {
                failures.append(.init(path: relative, error: error))
                continue
            }
            for entry in entries where !AssetNames.isHidden(entry.name) {
                let path = AssetNames.join(relative, entry.name)
                switch entry.kind {
                case .directory:
                    if !AssetNames.isExcluded(absolutePath: absolute + "/" + entry.name, in: root) {
                        pending.append(path)
                    }
                case .regularFile:
                    let file = absolute + "/" + entry.name
                    guard AssetNames.isImageFile(entry.name, absolutePath: file) else { continue }
                    var status = stat()
                    do {
                        try systemCall("lstat \(path)") { lstat(file, &status) }
                    } catch {
                        // Gone since the listing: not an asset any more.
                        if error.errno != ENOENT { failures.append(.init(path: path, error: error)) }
                        continue
                    }
                    guard (status.st_mode & S_IFMT) == S_IFREG else { continue }
                    versions.append(version(of: path, status))
                case .other:
                    continue
                }
            }
        }
        versions.sort { $0.path < $1.path }
        failures.sort { $0.path < $1.path }
        return AssetScan(versions: versions, failures: failures)
    }

    static func version(of path: String, _ status: stat) -> AssetVersion {
        AssetVersion(path: path, size: Int(status.st_size),
                     modifiedNanoseconds: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                     inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
    }
}
