#if canImport(Glibc)
import Glibc
#endif
import Synchronization
package import ThumbSystem

/// Watches the asset root recursively with inotify and reports completed files, removals and
/// "rescan needed" on one background thread.
///
/// - A watch is kept on every folder under the root except hidden ones, excluded ones and
///   symlinks. A folder that appears (created or moved in) is watched first and listed second,
///   and every image already inside is reported `.changed`: files written before the watch
///   existed are not lost (the classic inotify race). A file may therefore be reported twice.
/// - `.changed` means a file was closed after writing (`IN_CLOSE_WRITE`), renamed into place
///   (`IN_MOVED_TO`) or linked in (below), never merely created or modified. Files found by listing a new folder are
///   reported even if a writer still has them open; their close is then reported again.
/// - The handler runs on the watcher thread, one event at a time, in order. A slow handler lets
///   the kernel queue overflow, which is reported as `.rescan` (and logged at warning).
/// - A regular file that appears as a hard link (`IN_CREATE` with more than one link: `ln`,
///   `cp -l`, `rsync --link-dest`) is reported `.changed` at once: a link is of a file already
///   written, and no close will follow. A file created with one link is reported at its close.
/// - The root moved away, deleted or replaced (its own events, or its identity at `path`
///   changing under a renamed parent) drops every watch and is reported `.rescan`; the watcher
///   then looks for a folder at the root's path every `rootPollSeconds`, watches it again when
///   one is there and reports `.rescan` once more. Both are logged.
/// - Folders the kernel's watch limit (`fs.inotify.max_user_watches`) leaves unwatched are
///   logged (rate-limited, with the count and the sysctl to raise), counted in `coverage`,
///   tried again and rescanned on the same timer: what changed in them meanwhile is reported
///   `.changed`/`.removed` (see `FolderWatcher+Missed.swift`).
/// - Folders are walked descriptor-relative (`FolderWalk`): the kernel resolves one name per
///   call, so a folder costs the same at any depth.
/// - `stop()` must be called: the thread keeps the watcher alive until then.
package final class FolderWatcher: @unchecked Sendable {
    package enum Event: Sendable, Hashable {
        /// An image file (relative path) was completely written or renamed into place.
        case changed(path: String)
        /// An image file was deleted or renamed away.
        case removed(path: String)
        /// A folder was deleted or renamed away: everything under it is gone.
        case removedFolder(path: String)
        /// Events were lost (queue overflow), or the root itself went away or came back: the
        /// consumer must reconcile with `AssetScanner`.
        case rescan
    }

    package let root: AssetRoot
    let handler: @Sendable (Event) -> Void
    /// Called on the watcher thread after each wake-up's events are handled (the inotify queue
    /// read empty, the root checked, missed folders rescanned): a consumer may gather work
    /// across events until then.
    let drained: (@Sendable () -> Void)?
    let log: PipelineLog
    /// How often a lost root is looked for (and a watched one checked), seconds.
    package let rootPollSeconds: Double
    /// The root folder being watched (nil: lost, waiting for it to come back).
    let watchedRoot = Mutex<FolderIdentity?>(nil)
    /// Overflows since the last one was logged (watcher thread only), and when that was.
    var overflowsUnlogged = 0
    var overflowLoggedAt: ContinuousClock.Instant?
    /// Watched, unwatched and refused folders, for `/metrics`.
    package let coverage: WatchCoverage
    /// Adds one watch (`inotify_add_watch`; tests refuse chosen folders with ENOSPC).
    let watchAdder: WatchAdder
    /// Folders the watch limit left out (the thread that adds watches only: `start`, then the
    /// watcher thread).
    var missed = MissedFolders()
    /// Path bytes the walks handed the kernel, and in how many calls (for tests).
    let kernelPaths = Mutex<(bytes: Int, calls: Int)>((0, 0))
    let inotifyFD: Int32
    /// The watcher thread's wait on `inotifyFD`, which the lifecycle's stop cuts short.
    private let events: WakeablePoll
    /// A child of the owner's (the pipeline's): stops at `stop()` or with the owner.
    private let lifecycle: Lifecycle
    private let control = Mutex<Control>(Control())
    let table = Mutex<WatchTable>(WatchTable())

    private struct Control {
        enum Phase { case idle, running, stopped }
        var phase = Phase.idle
        var thread: LongLivedThread?
    }

    /// What every folder watch asks for. `IN_CREATE` matters for folders and hard links (other
    /// files count at close); `IN_ONLYDIR|IN_DONT_FOLLOW` refuse a path that became a file or a
    /// symlink (a watch by `/proc/self/fd/N` drops `IN_DONT_FOLLOW`: that link is the folder).
    static let watchMask: UInt32 = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM)
        | UInt32(IN_CREATE) | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW) | UInt32(IN_EXCL_UNLINK)

    /// Size of the read buffer: room for hundreds of events per read.
    static let bufferSize = 64 * 1024

    package convenience init(root: AssetRoot, log: PipelineLog = .standardError, rootPollSeconds: Double = 2,
                            coverage: WatchCoverage = WatchCoverage(), lifecycle: Lifecycle = Lifecycle(),
                            drained: (@Sendable () -> Void)? = nil,
                            handler: @escaping @Sendable (Event) -> Void) throws(SystemError) {
        try self.init(root: root, log: log, rootPollSeconds: rootPollSeconds, coverage: coverage, watchAdder: .inotify,
                      lifecycle: lifecycle, drained: drained, handler: handler)
    }

    init(root: AssetRoot, log: PipelineLog = .standardError, rootPollSeconds: Double = 2, coverage: WatchCoverage = WatchCoverage(),
         watchAdder: WatchAdder, lifecycle: Lifecycle = Lifecycle(), drained: (@Sendable () -> Void)? = nil,
         handler: @escaping @Sendable (Event) -> Void) throws(SystemError) {
        self.root = root
        self.handler = handler
        self.drained = drained
        self.log = log
        self.coverage = coverage
        self.watchAdder = watchAdder
        self.rootPollSeconds = rootPollSeconds.isFinite ? min(max(rootPollSeconds, 0.01), 3600) : 2
        let inotify = try systemCall("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)) }
        do throws(SystemError) {
            events = try WakeablePoll(watching: inotify, label: "folder watcher")
        } catch {
            close(inotify)
            throw error
        }
        inotifyFD = inotify
        self.lifecycle = lifecycle.child()
        self.lifecycle.onStop { [events] in events.wake() }
    }

    deinit {
        close(inotifyFD)
    }

    /// Watches every folder under the root, then starts the watcher thread. Changes made after
    /// this returns are reported. Fails if the root cannot be opened or watched, except for the
    /// kernel's watch limit: the folders it leaves out (the root too) are then covered by the
    /// retries and rescans of `FolderWatcher+Missed`. A watcher starts once.
    package func start() throws(SystemError) {
        try control.withLock { (control: inout Control) throws(SystemError) in
            guard control.phase == .idle else {
                throw SystemError(operation: "start folder watcher: already started", errno: EINVAL)
            }
            control.phase = .running
        }
        do throws(SystemError) {
            let failures = addTree("", reportFiles: false)
            if let fatal = failures.first(where: { $0.path.isEmpty && !Self.isWatchLimit($0.error) }) {
                throw fatal.error
            }
            noteMissed(failures, reportFiles: false)
            let thread = try LongLivedThread.start(name: "thumbd-watcher") { [self] in run() }
            // A `stop()` that ran meanwhile found no thread to join: join it here (it exits at once).
            let stoppedMeanwhile = control.withLock { control -> Bool in
                guard control.phase == .running else { return true }
                control.thread = thread
                return false
            }
            if stoppedMeanwhile { thread.join() }
        } catch {
            control.withLock { $0.phase = .stopped }
            throw error
        }
    }

    /// Stops the thread and waits for it (unless called from the handler itself). No handler
    /// call starts after this returns. Idempotent.
    package func stop() {
        let (thread, first) = control.withLock { control -> (LongLivedThread?, Bool) in
            let first = control.phase != .stopped
            control.phase = .stopped
            defer { control.thread = nil }
            return (control.thread, first)
        }
        guard first else { return }
        lifecycle.stop()
        // From the handler itself (the watcher thread), `join` detaches instead.
        thread?.join()
    }

    /// The watched folders (relative; "" is the root), sorted. For tests and diagnostics.
    var watchedFolders: [String] { table.withLock { $0.wds.keys.map(\.text).sorted() } }

    // MARK: - Watcher thread

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        let timeoutMilliseconds = Int32(rootPollSeconds * 1000)
        while !isStopping {
            let wake: WakeablePoll.Wake
            do {
                wake = try events.wait(timeoutMilliseconds: timeoutMilliseconds)
            } catch {
                log.warning("folder watcher of \(root.path) stops: \(error); thumbnails are still rendered on request")
                break
            }
            if wake.woken { break }
            if wake.readable { drain(buffer) }
            if !isStopping { checkRoot() }
            if !isStopping { retryMissedIfDue() }
            // After every wake-up, whatever reported its events (the queue, a root check, a
            // missed folder's rescan): nothing a consumer gathered waits for the next one.
            drained?()
        }
        drained?()
    }

    var isStopping: Bool { lifecycle.isStopping }

    /// Reads and handles events until the inotify fd is empty.
    private func drain(_ buffer: UnsafeMutableRawBufferPointer) {
        while !isStopping {
            let count: Int
            do {
                count = try systemCall("read inotify") { read(inotifyFD, buffer.baseAddress, buffer.count) }
            } catch {
                return  // EAGAIN: drained.
            }
            if count == 0 { return }
            for event in Self.parseEvents(UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
                if isStopping { return }
                handle(event)
            }
        }
    }

    /// One inotify record. `name` is nil when the kernel sent a name that is not UTF-8.
    struct RawEvent: Equatable {
        var wd: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: String?
    }

    /// Splits a read buffer into records: a 16-byte header (wd, mask, cookie, len) then `len`
    /// bytes of NUL-padded name. A truncated header or name ends the parse.
    static func parseEvents(_ bytes: UnsafeRawBufferPointer) -> [RawEvent] {
        let headerSize = 4 * MemoryLayout<UInt32>.size
        var events: [RawEvent] = []
        var offset = 0
        while bytes.count - offset >= headerSize {
            let wd = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + headerSize
            guard length <= bytes.count - nameStart else { break }
            let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<(nameStart + length)]).prefix { $0 != 0 }
            events.append(RawEvent(wd: wd, mask: mask, cookie: cookie,
                                   name: String(validating: nameBytes, as: UTF8.self)))
            offset = nameStart + length
        }
        return events
    }

    private func has(_ mask: UInt32, _ flag: Int32) -> Bool { mask & UInt32(bitPattern: flag) != 0 }

    func handle(_ event: RawEvent) {
        let mask = event.mask
        if has(mask, IN_Q_OVERFLOW) {
            noteOverflow()
            resynchronize()
            handler(.rescan)
            return
        }
        guard let folder = table.withLock({ $0.paths[event.wd] }) else { return }  // A dropped watch.
        if has(mask, IN_IGNORED) {
            changeTable { $0.remove(wd: event.wd) }
            if folder.isEmpty { loseRoot("lost its watch") }
            return
        }
        guard let name = event.name else { return }
        if name.isEmpty {
            // About the watched folder itself; the parent's events cover folders under the root.
            guard folder.isEmpty else { return }
            if has(mask, IN_DELETE_SELF) { loseRoot("was deleted") }
            if has(mask, IN_MOVE_SELF) { loseRoot("was moved away") }
            if has(mask, IN_UNMOUNT) { loseRoot("was unmounted") }
            return
        }
        if AssetNames.isHidden(name) { return }
        let path = AssetNames.join(folder, name)
        if has(mask, IN_ISDIR) {
            if AssetNames.isExcluded(relative: path, in: root) { return }
            if has(mask, IN_DELETE) || has(mask, IN_MOVED_FROM) {
                dropTree(path)
                handler(.removedFolder(path: path))
            }
            if has(mask, IN_CREATE) || has(mask, IN_MOVED_TO) {
                noteMissed(addTree(path, reportFiles: true), reportFiles: true)
            }
        } else if AssetNames.isImageName(name) {
            if has(mask, IN_DELETE) || has(mask, IN_MOVED_FROM) {
                handler(.removed(path: path))
            }
            let absolute = AssetNames.absolute(path, in: root)
            if has(mask, IN_CLOSE_WRITE) || has(mask, IN_MOVED_TO) {
                if AssetNames.isImageFile(name, absolutePath: absolute) { handler(.changed(path: path)) }
            } else if has(mask, IN_CREATE), Self.isHardLink(absolute), AssetNames.isImageFile(name, absolutePath: absolute) {
                handler(.changed(path: path))
            }
        }
    }

    /// A regular file with more than one link when it appears: made by `link(2)` from a file
    /// that exists already (whole, as far as anyone can tell: no close of a write will follow).
    /// One link means `open(O_CREAT)`: a writer may still be at it, and its close counts.
    static func isHardLink(_ absolutePath: String) -> Bool {
        var status = stat()
        guard (try? systemCall("lstat \(absolutePath)", { lstat(absolutePath, &status) })) != nil else { return false }
        return (status.st_mode & S_IFMT) == S_IFREG && status.st_nlink > 1
    }

    /// Changes the watch table and keeps the watched-folders gauge current.
    @discardableResult
    func changeTable<Result>(_ body: (inout WatchTable) -> Result) -> Result {
        table.withLock { table in
            let result = body(&table)
            coverage.watchedFolders.store(table.wds.count, ordering: .relaxed)
            return result
        }
    }
}
