#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

/// One process per cache folder: `flock(LOCK_EX | LOCK_NB)` on `thumbd.lock` inside it, held for
/// as long as the cache is open (the kernel drops it when the process dies, so a crash leaves no
/// stale lock). Two daemons (or a daemon and a batch) on one folder would evict each other's
/// files by diverging byte counts; the second is refused instead, naming the holder's pid.
final class CacheLock {
    static let fileName = "thumbd.lock"

    let path: String
    private var descriptor: Int32

    /// Takes the lock of the cache folder `directory`; `CacheError.Kind.inUse` when another
    /// open file (another process, or another cache in this one) holds it.
    init(directory: String) throws(CacheError) {
        path = directory + "/" + Self.fileName
        let lockPath = path
        do {
            descriptor = try systemCall("open \(lockPath)") { open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644) }
        } catch {
            throw CacheFiles.cacheError(error)
        }
        let fd = descriptor
        do {
            try systemCall("flock \(lockPath)") { flock(fd, LOCK_EX | LOCK_NB) }
        } catch {
            let holder = Self.recordedHolder(fd)
            // Once, here: a class whose init throws after every property is set is deinitialised,
            // and `release` there must not close this number again (another thread may own it by then).
            release()
            guard error.errno == EWOULDBLOCK else { throw CacheFiles.cacheError(error) }
            throw CacheError(operation: "lock \(lockPath)",
                             reason: "the cache folder \(directory) is in use by another thumbd\(holder.map { " (pid \($0))" } ?? "")",
                             kind: .inUse)
        }
        // Who holds it, for the message the next one gets (a hint: the lock is the truth).
        let text = Array("\(getpid())\n".utf8)
        _ = try? systemCall("truncate \(lockPath)") { ftruncate(fd, 0) }
        _ = try? systemCall("write \(lockPath)") { pwrite(fd, text, text.count, 0) }
    }

    deinit { release() }

    /// Drops the lock, then closes the descriptor. Idempotent. Unlocked first: a child another
    /// thread is spawning holds a copy of every descriptor until its exec closes the close-on-exec
    /// ones, and a lock only closed would live on in that copy meanwhile (a cache reopened at once
    /// was refused as "in use by another thumbd", this process).
    func release() {
        if descriptor >= 0 {
            _ = flock(descriptor, LOCK_UN)
            close(descriptor)
        }
        descriptor = -1
    }

    /// The pid written by the holder, if readable.
    private static func recordedHolder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        guard let count = try? systemCall("read lock", { pread(fd, &buffer, buffer.count, 0) }), count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }, as: UTF8.self))
    }
}
