import ThumbSystem

/// One version of an asset: any change to its bytes changes at least one field
/// (a rewrite in place changes size or mtime; a replace-by-rename changes the inode).
package struct AssetVersion: Hashable, Sendable, CustomStringConvertible {
    /// Path relative to the asset root, `/`-separated, no `.` or `..` components.
    package var path: String
    /// Size, bytes.
    package var size: Int
    /// Modification time, nanoseconds since the epoch.
    package var modifiedNanoseconds: Int64
    package var inode: UInt64
    package var device: UInt64

    package init(path: String, size: Int, modifiedNanoseconds: Int64, inode: UInt64, device: UInt64) {
        self.path = path
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
        self.device = device
    }

    /// A compact, stable text form (used in cache keys and the index).
    package var description: String { "\(path)|\(size)|\(modifiedNanoseconds)|\(inode)|\(device)" }
}

extension AssetVersion {
    /// The file identity part (everything but the path).
    var fileStatus: FileStatus {
        FileStatus(size: size, modifiedNanoseconds: modifiedNanoseconds, inode: inode, device: device)
    }

    init(path: String, _ status: FileStatus) {
        self.init(path: path, size: status.size, modifiedNanoseconds: status.modifiedNanoseconds, inode: status.inode, device: status.device)
    }
}
