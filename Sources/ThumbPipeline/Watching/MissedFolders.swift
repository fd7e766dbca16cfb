import ThumbSystem

/// Folders the kernel's watch limit left without a watch, each the top of an unwatched subtree
/// (a folder whose watch is refused is not listed, so nothing below it is tried), with the
/// images that were in it when last looked at: the difference at the next look is what its
/// events would have said.
///
/// Bounded: past `maxFolders` subtrees or `maxFiles` images the snapshots are dropped and the
/// whole root is rescanned on the retry timer instead (`.rescan`, the consumer's reconcile).
struct MissedFolders {
    /// Subtrees and images remembered at most (a test lowers them).
    var maxFolders = 4_096
    var maxFiles = 100_000

    struct Subtree {
        /// Relative path → version of every image under the subtree.
        var files: [String: FileStatus]
        /// Folders in it (itself included).
        var folders: Int
    }

    private(set) var subtrees: [String: Subtree] = [:]
    private(set) var fileCount = 0
    /// Past the caps: covered by whole-root rescans; `overflowFolders` refused at the last try.
    var overflowed = false
    var overflowFolders = 0
    /// The root's own watch was refused: `checkRoot` leaves it to the retries.
    var rootMissed = false
    /// When to try again (nil: nothing to try).
    var nextRetry: ContinuousClock.Instant?

    /// Refusals not logged yet (the log is rate-limited), the first few of their folders, the last line.
    var unlogged = 0
    var unloggedExamples: [String] = []
    var loggedAt: ContinuousClock.Instant?
    /// Something was missed since the last "watched again" notice; the caps' warning was given.
    var hadMisses = false
    var overflowLogged = false

    var isEmpty: Bool { subtrees.isEmpty && !overflowed && !rootMissed }

    /// Folders without a watch, as last seen (past the caps: only the tops refused last time).
    var unwatchedFolders: Int {
        overflowed ? overflowFolders : subtrees.values.reduce(0) { $0 + $1.folders }
    }

    /// Room left for images under the caps.
    var filesLeft: Int { max(0, maxFiles - fileCount) }

    var isFull: Bool { subtrees.count >= maxFolders }

    mutating func add(_ folder: String, _ subtree: Subtree) {
        if let old = subtrees.updateValue(subtree, forKey: folder) { fileCount -= old.files.count }
        fileCount += subtree.files.count
        hadMisses = true
    }

    @discardableResult
    mutating func remove(_ folder: String) -> Subtree? {
        guard let old = subtrees.removeValue(forKey: folder) else { return nil }
        fileCount -= old.files.count
        return old
    }

    /// Every subtree at or under `folder` ("" is all), e.g. when it was deleted.
    mutating func removeAll(under folder: String) {
        if folder.isEmpty {
            subtrees = [:]
            fileCount = 0
            overflowed = false
            overflowFolders = 0
            rootMissed = false
        } else {
            for key in subtrees.keys where key == folder || key.isPath(under: folder) { remove(key) }
        }
        if isEmpty { nextRetry = nil }
    }

    /// Past the caps: the snapshots go, whole-root rescans take over.
    mutating func overflow() {
        overflowFolders = unwatchedFolders + 1
        subtrees = [:]
        fileCount = 0
        overflowed = true
        hadMisses = true
    }
}
