#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// Opens a relative path beneath a directory descriptor so that no step of the resolution can
/// leave that directory: no `..` above it, no absolute symlink, no symlink whose target climbs
/// out, no procfs magic link. With `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
/// RESOLVE_NO_SYMLINKS)` the kernel enforces it in one call. A path through a symlink, or a
/// kernel without `openat2` (before Linux 5.6, or a seccomp filter that refuses the call), takes
/// the walk: one component at a time from the folder reached so far with `O_NOFOLLOW`, relative
/// symlink targets walked the same way, which also yields the path reached (for the version
/// and the cache-folder check) without asking /proc.
struct BeneathOpener: Sendable {
    enum Method: Sendable { case openat2, walk }

    struct Opened {
        var descriptor: Int32
        /// The path under the directory that was reached, symlinks resolved.
        var canonicalPath: String
    }

    let method: Method

    /// Symlinks followed in one resolution, as the kernel's MAXSYMLINKS.
    static let maxSymlinks = 40

    /// `openat2` when this kernel (and any seccomp filter) allows it, else the walk.
    init() {
        method = Self.openat2Works ? .openat2 : .walk
    }

    init(method: Method) {
        self.method = method
    }

    /// Probed once: opening "/" by `openat2` fails with ENOSYS (old kernel) or EPERM (filtered).
    static let openat2Works: Bool = {
        guard let fd = try? systemCall("probe openat2", { ConfinedOpen.openat2(AT_FDCWD, "/", flags: ConfinedOpen.pathOnly | O_CLOEXEC, resolve: 0) }) else { return false }
        close(fd)
        return true
    }()

    /// Opens `components` beneath `directory` with `flags`.
    func open(_ components: [Substring], beneath directory: Int32, flags: Int32) throws(SystemError) -> Opened {
        guard method == .openat2 else { return try walk(components, beneath: directory, flags: flags) }
        let lexical = components.joined(separator: "/")
        do {
            // Most assets are reached without a symlink: then the path asked for is the path.
            let descriptor = try systemCall("open \(lexical)") {
                ConfinedOpen.openat2(directory, lexical, flags: flags, resolve: ConfinedOpen.beneathWithoutLinks)
            }
            return Opened(descriptor: descriptor, canonicalPath: lexical)
        } catch where error.errno == ELOOP {
            // A symlink on the way: the walk follows it under the same rules and knows the
            // path it reaches (openat2 would need /proc to tell, which costs more than the walk).
            return try walk(components, beneath: directory, flags: flags)
        }
    }

    /// The component-wise resolution: each step `openat(…, O_PATH | O_NOFOLLOW)` from the
    /// folder reached so far, symlinks read and their (relative) targets walked the same way,
    /// `..` going back one folder and never above `directory`; the last step opened with
    /// `flags | O_NOFOLLOW`, so a symlink swapped in after it was looked at fails with ELOOP.
    func walk(_ components: [Substring], beneath directory: Int32, flags: Int32) throws(SystemError) -> Opened {
        var folders: [(descriptor: Int32, name: String)] = []
        defer { for folder in folders { close(folder.descriptor) } }
        var pending = components.reversed().map(String.init)
        var symlinks = 0
        while let name = pending.popLast() {
            if name.isEmpty || name.utf8.elementsEqual(".".utf8) { continue }
            // A name is one step: `openat` would resolve a `/` inside it, symlinks and all.
            guard !name.utf8.contains(UInt8(ascii: "/")) else { throw SystemError(operation: "open: a name holds '/'", errno: EXDEV) }
            if name.utf8.elementsEqual("..".utf8) {
                guard let left = folders.popLast() else { throw SystemError(operation: "open: '..' above the root", errno: EXDEV) }
                close(left.descriptor)
                continue
            }
            let parent = folders.last?.descriptor ?? directory
            let step = try systemCall("open \(name)") { openat(parent, name, ConfinedOpen.pathOnly | O_NOFOLLOW | O_CLOEXEC) }
            var status = stat()
            do throws(SystemError) {
                try systemCall("fstat \(name)") { fstat(step, &status) }
            } catch {
                close(step)
                throw error
            }
            let isLast = pending.isEmpty
            switch status.st_mode & S_IFMT {
            case S_IFLNK:
                let target: String
                do throws(SystemError) {
                    target = try Self.symlinkTarget(step)
                } catch {
                    close(step)
                    throw error
                }
                close(step)
                symlinks += 1
                guard symlinks <= Self.maxSymlinks else { throw SystemError(operation: "open \(name)", errno: ELOOP) }
                guard target.utf8.first != UInt8(ascii: "/") else { throw SystemError(operation: "open \(name): absolute symlink", errno: EXDEV) }
                pending += ExactPath.components(target).reversed().map(String.init)
            case S_IFDIR where !isLast:
                folders.append((step, name))
            default:
                guard isLast else {
                    close(step)
                    throw SystemError(operation: "open \(name)", errno: ENOTDIR)
                }
                let canonical = (folders.map(\.name) + [name]).joined(separator: "/")
                if flags & ConfinedOpen.pathOnly != 0 { return Opened(descriptor: step, canonicalPath: canonical) }
                close(step)
                let descriptor = try systemCall("open \(canonical)") { openat(parent, name, flags | O_NOFOLLOW) }
                return Opened(descriptor: descriptor, canonicalPath: canonical)
            }
        }
        // Only "." steps, or a symlink to the root itself: the root is not an asset.
        throw SystemError(operation: "open: the root itself", errno: EISDIR)
    }

    /// The target of the symlink behind an `O_PATH | O_NOFOLLOW` descriptor.
    static func symlinkTarget(_ descriptor: Int32) throws(SystemError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let capacity = buffer.count - 1
        let count = try systemCall("readlinkat") {
            buffer.withUnsafeMutableBufferPointer { raw in
                raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) { readlinkat(descriptor, "", $0, capacity) }
            }
        }
        guard count < capacity else { throw SystemError(operation: "readlinkat: target too long", errno: ENAMETOOLONG) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
