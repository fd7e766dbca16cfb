#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbSystem

/// Why an opened asset's bytes could not be had.
typealias AssetReadError = FileReadError

/// An asset opened by `AssetRoot.openForReading`: the descriptor, and the version `fstat` of
/// that descriptor gave. The bytes are read from this descriptor only (never a second open by
/// path), so the version describes exactly the file read. Closed at deinit.
package final class AssetFile {
    let descriptor: Int32
    package let version: AssetVersion

    init(descriptor: Int32, version: AssetVersion) {
        self.descriptor = descriptor
        self.version = version
    }

    deinit { close(descriptor) }

    /// Reads the whole file (refused from its size when over `maxBytes`), from this descriptor.
    func readAll(maxBytes: Int) throws(AssetReadError) -> SourceBytes {
        try SourceBytes.read(descriptor: descriptor, status: version.fileStatus, maxBytes: maxBytes, label: version.path)
    }
}
