#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif
import ThumbImaging

/// Which names under the asset root are assets, shared by the scanner and the watcher so that
/// the start-up reconciliation and the live events agree.
enum AssetNames {
    /// Extensions of sources, lowercase, without the dot: every format's of the one table
    /// (`SourceFormat.table`). Compared case-insensitively. The name only chooses what is
    /// watched: the decoder goes by the content.
    static let imageExtensions: Set<String> = SourceFormat.extensions

    /// A hidden name (`.name.tmp`, `.git`, `.Trash-1000`): temp files being written, tool folders.
    /// Neither hidden files nor hidden folders are assets.
    static func isHidden<S: StringProtocol>(_ name: S) -> Bool { name.utf8.first == UInt8(ascii: ".") }

    /// A visible file name with an image extension (`a.JPG`, `b.jpeg`, `c.heic`), or with no
    /// extension at all (exports and content-addressed stores name files `IMG_0001` or by hash).
    static func isImageName<S: StringProtocol>(_ name: S) -> Bool {
        guard !isHidden(name) else { return false }
        guard let dot = name.lastIndex(of: ".") else { return true }
        let ext = name[name.index(after: dot)...]
        guard !ext.isEmpty, ext.utf8.count <= 4 else { return false }
        return imageExtensions.contains(String(ext).lowercased())
    }

    /// Whether a visible regular file is an asset: by its extension, or, for a name without
    /// one, by its first bytes (a README or LICENSE beside the photos is no asset, and must not
    /// become a failed render). Removals go by the name alone: a file that is gone cannot be read.
    static func isImageFile<S: StringProtocol>(_ name: S, absolutePath: String) -> Bool {
        guard isImageName(name) else { return false }
        guard !name.contains(".") else { return true }
        return sniffsAsImage(absolutePath)
    }

    /// Opens without following a link and without blocking (a FIFO answers at once), reads the
    /// first bytes and asks the decoders' sniffing.
    static func sniffsAsImage(_ absolutePath: String) -> Bool {
        guard let descriptor = try? systemCall("open \(absolutePath)", {
            open(absolutePath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        }) else { return false }
        defer { close(descriptor) }
        return sniffsAsImage(descriptor: descriptor)
    }

    /// Reads the first bytes of an open file and asks the decoders' sniffing.
    static func sniffsAsImage(descriptor: Int32) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = (try? bytes.withUnsafeMutableBytes { buffer in
            try systemCall("read for sniffing") { read(descriptor, buffer.baseAddress, buffer.count) }
        }) ?? 0
        return bytes.withUnsafeBytes { SourceFormat.sniff(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) } != nil
    }

    /// `relative` joined under the root's absolute path ("" is the root itself).
    static func absolute(_ relative: String, in root: AssetRoot) -> String {
        relative.isEmpty ? root.path : root.path + "/" + relative
    }

    /// `name` inside the relative folder `folder` ("" is the root).
    static func join(_ folder: String, _ name: String) -> String {
        folder.isEmpty ? name : folder + "/" + name
    }

    /// Whether the folder at `relative` (not "") is one of the root's excluded folders or inside
    /// one — compared by bytes, as the file system names them, and without building its
    /// absolute path (which grows with the depth).
    static func isExcluded(relative: String, in root: AssetRoot) -> Bool {
        // The root itself excluded (or inside an excluded folder): everything under it is.
        if root.excluded.contains(where: { root.path == $0 || root.path.hasPrefix($0 + "/") }) { return true }
        return root.excludedInside.contains { relative == $0 || relative.utf8.starts(with: ($0 + "/").utf8) }
    }

    /// The parent folder of a relative path ("" for a name at the root), split by bytes: a
    /// combining mark after a '/' makes one Swift Character of both (and a Prepend character
    /// before one, too), so `lastIndex(of: "/")` on the characters would miss that slash.
    static func parent(of relative: String) -> String {
        let bytes = relative.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }
}

extension StringProtocol {
    /// Whether this relative path lies under the relative folder `folder` ("" is the root),
    /// comparing bytes as the file system does (see `AssetNames.parent(of:)`).
    func isPath(under folder: String) -> Bool {
        folder.isEmpty ? !isEmpty : utf8.count > folder.utf8.count && utf8.starts(with: folder.utf8)
            && utf8.dropFirst(folder.utf8.count).first == UInt8(ascii: "/")
    }
}
