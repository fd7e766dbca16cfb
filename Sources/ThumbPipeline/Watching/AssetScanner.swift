#if canImport(Glibc)
import Glibc
package import ThumbSystem
#endif

/// What a scan found: the assets, and the folders it could not read (whose assets are then
/// missing from `versions` — a reconciliation must not take that as "deleted").
package struct AssetScan: Sendable, Equatable {
    /// A folder (or the root, path "") that could not be listed, or a file that could not be stat'ed.
    package struct Failure: Sendable, Equatable, CustomStringConvertible {
        /// Relative to the asset root; "" is the root itself.
        package var path: String
        package var error: SystemError
        package var description: String { "\(path.isEmpty ? "." : path): \(error)" }
    }

    /// Regular image files, sorted by path.
    package var versions: [AssetVersion]
    package var failures: [Failure]
    /// Folders listed.
    package var folders = 0
    /// The scan stopped at its limit: `versions` is a part.
    package var truncated = false

    /// Whether `path` (relative) lies in a folder the scan could not read, so its absence from
    /// `versions` means nothing.
    package func isUncertain(_ path: String) -> Bool {
        failures.contains { $0.path.isEmpty || path == $0.path || path.isPath(under: $0.path) }
    }
}

/// Walks the asset root to reconcile it with the cache at start (and after a `.rescan`).
///
/// Counted: regular files (not symlinks — `lstat`) with an extension of a format of the table
/// (`SourceFormat.table`: .jpg .png .heic .mp4 .webm …, any case), or without an extension and
/// a known format's first bytes, at any depth. Skipped: hidden names (files and folders starting with '.', such as
/// `.name.tmp` being written), the root's `excluded` folders, symlinked folders (never
/// followed), names that are not valid UTF-8.
package enum AssetScanner {
    /// The image files under the root, sorted by path. Unreadable folders are silently skipped;
    /// use `scanReportingFailures` when they matter.
    package static func scan(_ root: AssetRoot) -> [AssetVersion] {
        scanReportingFailures(root).versions
    }

    /// The image files under the root (or under its relative folder `folder`), sorted by path,
    /// with every folder that could not be read.
    package static func scanReportingFailures(_ root: AssetRoot, under folder: String = "") -> AssetScan {
        scan(root, under: folder, walk: FolderWalk(root: root))
    }

    /// The walk: folders opened relative to their parent and files looked at relative to their
    /// folder, so a file costs the same at any depth (by absolute paths the kernel walked every
    /// level for every file). With `limit`, it stops once more than `limit` images are found
    /// (`truncated`; the versions are then a part, unsorted).
    static func scan(_ root: AssetRoot, under folder: String, limit: Int = .max, walk: FolderWalk) -> AssetScan {
        var versions: [AssetVersion] = []
        var failures: [AssetScan.Failure] = []
        var folders = 0
        // A subfolder waits with its parent open (unless too many are), opened from it in turn.
        var pending: [(parent: WalkFolder?, name: String, relative: String)] = [(nil, "", folder)]
        while let next = pending.popLast() {
            let entries: [DirectoryEntry]
            let current: WalkFolder
            do throws(SystemError) {
                current = try walk.open(next.name, relative: next.relative, in: next.parent)
                entries = try walk.list(current)
            } catch {
                failures.append(.init(path: next.relative, error: error))
                continue
            }
            folders += 1
            for entry in entries where !AssetNames.isHidden(entry.name) {
                let path = AssetNames.join(current.relative, entry.name)
                switch entry.kind {
                case .directory:
                    if !AssetNames.isExcluded(relative: path, in: root) {
                        pending.append((walk.mayKeepFolders ? current : nil, entry.name, path))
                    }
                case .regularFile:
                    guard walk.isImageFile(entry.name, in: current) else { continue }
                    let status: stat
                    do throws(SystemError) {
                        status = try walk.status(of: entry.name, in: current)
                    } catch {
                        // Gone since the listing: not an asset any more.
                        if error.errno != ENOENT { failures.append(.init(path: path, error: error)) }
                        continue
                    }
                    guard (status.st_mode & S_IFMT) == S_IFREG else { continue }
                    versions.append(version(of: path, status))
                    if versions.count > limit { return AssetScan(versions: versions, failures: failures, folders: folders, truncated: true) }
                case .other:
                    continue
                }
            }
        }
        versions.sort { $0.path < $1.path }
        failures.sort { $0.path < $1.path }
        return AssetScan(versions: versions, failures: failures, folders: folders)
    }

    static func version(of path: String, _ status: stat) -> AssetVersion {
        AssetVersion(path: path, size: Int(status.st_size),
                     modifiedNanoseconds: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                     inode: UInt64(status.st_ino), device: UInt64(status.st_dev))
    }
}
