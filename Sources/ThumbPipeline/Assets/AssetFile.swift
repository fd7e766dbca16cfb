#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging

/// Why an opened asset's bytes could not be had.
enum AssetReadError: Error, Equatable {
    /// Over `maxFileBytes`, from its size (nothing read).
    case tooLarge(reason: String)
    /// The file was written while being read (shorter or longer than `fstat` said, or its size or
    /// mtime moved): a transient conflict, worth one more try.
    case changed(reason: String)
    case unreadable(reason: String)
}

/// An asset opened by `AssetRoot.openForReading`: the descriptor, and the version `fstat` of
/// that descriptor gave. The bytes are read from this descriptor only (never a second open by
/// path), so the version describes exactly the file read. Closed at deinit.
public final class AssetFile {
    let descriptor: Int32
    public let version: AssetVersion

    init(descriptor: Int32, version: AssetVersion) {
        self.descriptor = descriptor
        self.version = version
    }

    deinit { close(descriptor) }

    /// Reads the whole file (refused from its size when over `maxBytes`).
    func readAll(maxBytes: Int) throws(AssetReadError) -> SourceBytes {
        let size = version.size
        guard size <= maxBytes else {
            throw .tooLarge(reason: "file is \(size) bytes, over the \(maxBytes)-byte limit")
        }
        let status = FileStatus(size: size, modifiedNanoseconds: version.modifiedNanoseconds,
                                inode: version.inode, device: version.device)
        let path = version.path
        let source = try SourceBytes.filled(count: size, fileStatus: status) { (buffer) throws(AssetReadError) in
            var filled = 0
            while filled < size {
                let got: Int
                do throws(SystemError) {
                    got = try systemCall("read \(path)") { read(descriptor, buffer.baseAddress! + filled, size - filled) }
                } catch {
                    throw .unreadable(reason: error.description)
                }
                guard got > 0 else { throw .changed(reason: "\(path) shrank while being read (\(filled) of \(size) bytes)") }
                filled += got
            }
        }
        // Grown, or rewritten in place, since the open: the bytes may mix two versions.
        var extra: UInt8 = 0
        if let more = try? systemCall("read \(path)", { read(descriptor, &extra, 1) }), more > 0 {
            throw .changed(reason: "\(path) grew while being read")
        }
        var after = stat()
        do throws(SystemError) {
            try systemCall("fstat \(path)") { fstat(descriptor, &after) }
        } catch {
            throw .unreadable(reason: error.description)
        }
        let modified = Int64(after.st_mtim.tv_sec) * 1_000_000_000 + Int64(after.st_mtim.tv_nsec)
        guard Int(after.st_size) == size, modified == version.modifiedNanoseconds else {
            throw .changed(reason: "\(path) was modified while being read")
        }
        return source
    }
}
