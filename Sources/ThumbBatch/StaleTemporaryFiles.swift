#if canImport(Glibc)
import Glibc
#endif

/// The temporary files (`.NAME.PID.RAND.tmp`, `AtomicFile.replace`) that a writer killed in the
/// middle of a write (`kill -9`, a crash, a power cut) leaves in an output tree: a later run
/// removes them from each folder the first time it writes into that folder. No walk of its own:
/// a resumed run writes exactly where the killed one stopped, and a tree that is up to date is
/// not listed at all.
///
/// A file goes only when its writer is certainly gone, all of:
/// - the name parses (a file of anyone else's naming is never touched);
/// - its PID is no process on this host (`kill(PID, 0)` says ESRCH). A PID that is alive keeps
///   its file whatever program it is now (`/proc/PID/comm` cannot tell a reused PID from another
///   thumbd, nor from another program that writes such names): a later run removes it;
/// - nobody holds its lock: `AtomicFile` locks the file from creation until the rename, which is
///   what protects a writer on another host sharing the tree (NFS) or in another PID namespace,
///   where the PID in the name means nothing here;
/// - it changed at least `graceSeconds` ago: a writer between creating the file and locking it,
///   or a writer of an older thumbd that takes no lock, is not caught in the act.
struct StaleTemporaryFiles {
    static let graceSeconds = 1
    /// A follower writes into new folders for months: forgetting them all now and then costs
    /// one more listing each, holding them all costs memory without bound.
    static let maxRemembered = 100_000

    private var swept: Set<String> = []

    /// Sweeps `folder` unless this run did already; the number of files removed.
    mutating func sweepOnce(_ folder: String) -> Int {
        if swept.count >= Self.maxRemembered { swept.removeAll() }
        guard swept.insert(folder).inserted else { return 0 }
        return Self.sweep(folder)
    }

    /// Removes the abandoned temporary files directly in `folder` (not below it).
    static func sweep(_ folder: String) -> Int {
        guard let directory = opendir(folder) else { return 0 }
        defer { closedir(directory) }
        let descriptor = dirfd(directory)
        var removed = 0
        while let entry = readdir(directory) {
            // The name's bytes as they are: a name that is not UTF-8 must not be "repaired" into
            // another file's name.
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            guard let pid = writerPID(name), isGone(pid) else { continue }
            if removeIfAbandoned(name, in: descriptor) { removed += 1 }
        }
        return removed
    }

    /// The PID of `.NAME.PID.RAND.tmp`, or nil when the name is not of that form.
    static func writerPID(_ name: [UInt8]) -> pid_t? {
        let suffix = Array(".tmp".utf8)
        guard name.count > 1 + suffix.count, name.first == UInt8(ascii: "."), name.suffix(suffix.count).elementsEqual(suffix) else {
            return nil
        }
        // From the end: RAND, then PID, each digits only; NAME (anything, not empty) before them.
        let body = name.dropFirst().dropLast(suffix.count)
        let parts = body.split(separator: UInt8(ascii: "."), maxSplits: Int.max, omittingEmptySubsequences: false)
        guard parts.count >= 3, let random = parts.last, let pidText = parts.dropLast().last,
              !parts.dropLast(2).allSatisfy(\.isEmpty) else { return nil }
        guard decimal(random, max: Int(UInt32.max)) != nil, let pid = decimal(pidText, max: Int(Int32.max)), pid > 0 else { return nil }
        return pid_t(pid)
    }

    /// Digits only, at most `max`; nil otherwise (a sign, a space, an overflow).
    private static func decimal(_ digits: some Collection<UInt8>, max: Int) -> Int? {
        guard (1...10).contains(digits.count) else { return nil }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value <= max ? value : nil
    }

    /// No process `pid` here. EPERM (alive, another user's) and every other answer: not gone.
    static func isGone(_ pid: pid_t) -> Bool {
        guard pid != getpid() else { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    private static func removeIfAbandoned(_ name: [UInt8], in folder: Int32) -> Bool {
        let path = name.map { CChar(bitPattern: $0) } + [0]
        // O_NONBLOCK: a FIFO given such a name must not hang the run; O_NOFOLLOW: nor a symlink
        // lead it to lock (and take for ours) a file elsewhere.
        let fd = openat(folder, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return false }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        // A change time in the future (another host's clock): not old.
        guard now.tv_sec - status.st_ctim.tv_sec >= Self.graceSeconds else { return false }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        // Still the file that was checked under that name (it was not renamed away and replaced).
        var named = stat()
        guard fstatat(folder, path, &named, AT_SYMLINK_NOFOLLOW) == 0, named.st_dev == status.st_dev, named.st_ino == status.st_ino else {
            return false
        }
        return unlinkat(folder, path, 0) == 0
    }
}
