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
