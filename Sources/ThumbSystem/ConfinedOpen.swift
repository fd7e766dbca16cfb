#if canImport(Glibc)
import Glibc
#endif
import CThumbSystem

/// The calls Glibc's Swift module lacks (openat2 has no glibc wrapper; O_PATH needs _GNU_SOURCE),
/// so that no module above imports the C shim.
package enum ConfinedOpen {
    package static let pathOnly: Int32 = CThumb_O_PATH

    /// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS`.
    package static let beneathWithoutLinks = UInt64(CThumb_RESOLVE_BENEATH | CThumb_RESOLVE_NO_MAGICLINKS | CThumb_RESOLVE_NO_SYMLINKS)

    /// openat2(2): a descriptor, or -1 with errno set (ENOSYS before Linux 5.6).
    package static func openat2(_ directory: Int32, _ path: String, flags: Int32, resolve: UInt64) -> Int32 {
        CThumb_openat2(directory, path, UInt64(flags), resolve)
    }
}

/// statfs(2)'s file system type, which Glibc's Swift module lacks (<sys/vfs.h>).
package enum FileSystemType {
    /// The magic number of the file system `path` is on (`NFS_SUPER_MAGIC`, ...).
    package static func magic(of path: String) throws(SystemError) -> Int64 {
        var type: Int64 = 0
        try systemCall("statfs \(path)") { CThumb_fileSystemType(path, &type) }
        return type
    }
}

/// The heap's size in use, for measuring what a structure really costs (tests, diagnostics).
package enum HeapUsage {
    /// Bytes malloc handed out and not had back, over every arena (mmapped chunks included).
    package static var bytesInUse: Int { Int(CThumb_heapBytesInUse()) }
}
