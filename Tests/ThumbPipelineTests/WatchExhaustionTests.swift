import Foundation
import Synchronization
import Testing
@testable import ThumbPipeline
import ThumbSystem

/// A watch adder that refuses chosen folders as the kernel does at `fs.inotify.max_user_watches`
/// (ENOSPC) — the real limit is a sysctl of the whole machine, not a test's to lower.
final class RefusingWatches: Sendable {
    let refused: Mutex<Set<String>>
    let attempts = Mutex<[String]>([])

    init(_ refused: Set<String>) { self.refused = Mutex(refused) }

    func allow(_ folder: String) { _ = refused.withLock { $0.remove(folder) } }

    var adder: WatchAdder {
        WatchAdder { [self] fd, path, relative, mask throws(SystemError) in
            attempts.withLock { $0.append(relative) }
            if refused.withLock({ $0.contains(relative) }) { throw SystemError(operation: "inotify_add_watch \(path)", errno: ENOSPC) }
            return try WatchAdder.inotify.add(fd, path, relative, mask)
        }
    }
}

/// Issue 11 item 6: watches the kernel refuses. Before, `start` threw at the first ENOSPC (the
/// daemon ran with "folder watcher not running", never retried), and at run time the folders
/// refused stayed unwatched without a word.
@Suite final class WatchExhaustionTests {
    let sandbox: WatchSandbox
    let log = WatchEventLog()
    let capture = LogCapture()
    var watcher: FolderWatcher?

    init() throws {
        sandbox = try WatchSandbox("watchexhaustion")
    }

    deinit {
        watcher?.stop()
        sandbox.remove()
    }

    func startWatcher(refusing watches: RefusingWatches, adjust: (FolderWatcher) -> Void = { _ in }) throws -> FolderWatcher {
        let root = try AssetRoot(path: sandbox.root)
        let log = self.log
        let watcher = try FolderWatcher(root: root, log: capture.log, rootPollSeconds: 0.05, watchAdder: watches.adder) { log.append($0) }
        adjust(watcher)
        self.watcher = watcher
        try watcher.start()
        return watcher
    }

    func rewrite(_ relative: String, bytes: Int) throws {
        try sandbox.write(".tmp", bytes: bytes)
        try sandbox.rename(sandbox.root + "/.tmp", sandbox.root + "/" + relative)
    }

    @Test func startsWithWhatItCanWatchAndRescansTheRest() async throws {
        for folder in ["a", "b/sub", "c/d"] { try sandbox.mkdir(folder) }
        for file in ["a/1.jpg", "b/keep.jpg", "b/sub/old.jpg", "b/sub/same.png", "c/d/same.jpg"] { try sandbox.write(file) }
        let watches = RefusingWatches(["b", "c/d"])
        let watcher = try startWatcher(refusing: watches)
        #expect(watcher.watchedFolders == ["", "a", "c"])
        #expect(watcher.coverage.snapshot == .init(watchedFolders: 3, unwatchedFolders: 3, watchFailures: 2, missedFolderRescans: 0,
                                                      queueOverflows: 0))
        #expect(capture.count(.warning, "could not watch 2 folders (b, c/d) nor what is under them") == 1, "\(capture.text)")
        #expect(capture.count(.warning, "fs.inotify.max_user_watches") == 1 && capture.count(.warning, "sysctl -w fs.inotify.max_user_watches=") == 1)
        #expect(!watches.attempts.withLock { $0 }.contains("b/sub"), "a refused folder is not listed: its subfolders are not tried")

        // What changes in the unwatched folders is found by the rescans.
        try sandbox.write("b/new.jpg")
        try rewrite("b/keep.jpg", bytes: 99)
        #expect(unlink(sandbox.root + "/b/sub/old.jpg") == 0)
        try sandbox.write("c/d/also.heic")
        #expect(await log.wait { Set($0).isSuperset(of: [.changed(path: "b/new.jpg"), .changed(path: "b/keep.jpg"),
                                                            .removed(path: "b/sub/old.jpg"), .changed(path: "c/d/also.heic")]) }, "\(log.snapshot)")
        #expect(!log.snapshot.contains(.changed(path: "b/sub/same.png")) && !log.snapshot.contains(.changed(path: "c/d/same.jpg")),
                "unchanged files are not reported again: \(log.snapshot)")
        #expect(watcher.coverage.snapshot.missedFolderRescans >= 1)
        #expect(watcher.coverage.snapshot.watchFailures >= 4, "the retries count")
        #expect(capture.count(.warning, "could not watch") == 1, "retries are not logged again: \(capture.text)")

        // The limit lets go: the folders are watched (and their files then seen at close).
        watches.allow("b")
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "a", "b", "b/sub", "c"] })
        #expect(await log.wait { _ in watcher.coverage.snapshot.unwatchedFolders == 1 && watcher.coverage.snapshot.watchedFolders == 5 })
        watches.allow("c/d")
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "a", "b", "b/sub", "c", "c/d"] })
        #expect(await log.wait { _ in self.capture.count(.notice, "every folder is watched again") == 1 }, "\(capture.text)")
        #expect(watcher.coverage.snapshot.unwatchedFolders == 0)
        let inPlace = sandbox.root + "/b/sub/late.jpg"
        let fd = open(inPlace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        close(fd)
        #expect(await log.wait(for: .changed(path: "b/sub/late.jpg")))
    }

    @Test func aNewFolderWithARefusedSubfolderIsReportedWhole() async throws {
        try sandbox.mkdir("album/inner/deeper", in: sandbox.outside)
        try sandbox.write("album/1.jpg", in: sandbox.outside)
        try sandbox.write("album/inner/2.jpg", in: sandbox.outside)
        try sandbox.write("album/inner/deeper/3.jpg", in: sandbox.outside)
        let watches = RefusingWatches(["album/inner"])
        let watcher = try startWatcher(refusing: watches)
        try sandbox.rename(sandbox.outside + "/album", sandbox.root + "/album")
        // Every image is reported, the refused part's too; that part is counted and logged.
        #expect(await log.wait { Set($0).isSuperset(of: [.changed(path: "album/1.jpg"), .changed(path: "album/inner/2.jpg"),
                                                            .changed(path: "album/inner/deeper/3.jpg")]) }, "\(log.snapshot)")
        #expect(watcher.watchedFolders == ["", "album"])
        #expect(await log.wait { _ in watcher.coverage.snapshot.unwatchedFolders == 2 })
        #expect(capture.count(.warning, "could not watch 1 folder (album/inner) nor what is under it") == 1, "\(capture.text)")
        // Later writes there are found by the rescan, and a delete of the folder forgets it.
        try sandbox.write("album/inner/deeper/4.png")
        #expect(await log.wait(for: .changed(path: "album/inner/deeper/4.png")))
        try FileManager.default.removeItem(atPath: sandbox.root + "/album/inner")
        #expect(await log.wait(for: .removedFolder(path: "album/inner")))
        #expect(await log.wait { _ in watcher.coverage.snapshot.unwatchedFolders == 0 })
    }

    @Test func aRefusedRootStartsAndIsWatchedOnceItCanBe() async throws {
        try sandbox.mkdir("sub")
        try sandbox.write("sub/a.jpg")
        let watches = RefusingWatches([""])
        let watcher = try startWatcher(refusing: watches)
        #expect(watcher.watchedFolders.isEmpty)
        #expect(watcher.coverage.snapshot.unwatchedFolders == 2)
        try sandbox.write("b.jpg")
        #expect(await log.wait(for: .changed(path: "b.jpg")))
        #expect(!log.snapshot.contains(.rescan), "not a lost root: \(log.snapshot)")
        watches.allow("")
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "sub"] })
        try sandbox.write("sub/c.jpg")
        #expect(await log.wait(for: .changed(path: "sub/c.jpg")))
        #expect(capture.count(.notice, "is back") == 0, "\(capture.text)")
    }

    /// Past the caps on what it remembers, the watcher says so and rescans the whole root
    /// (`.rescan`: the consumer's reconcile) on the same timer.
    @Test func pastTheCapsTheWholeRootIsRescanned() async throws {
        for folder in ["x", "y", "z"] {
            try sandbox.mkdir(folder)
            try sandbox.write(folder + "/p.jpg")
        }
        let watches = RefusingWatches(["x", "y", "z"])
        let watcher = try startWatcher(refusing: watches) { $0.missed.maxFolders = 2 }
        #expect(capture.count(.warning, "more than 2 folders or 100000 images are without a watch") == 1, "\(capture.text)")
        #expect(await log.wait { $0.filter { $0 == .rescan }.count >= 2 })
        #expect(watcher.coverage.snapshot.unwatchedFolders == 3)
        for folder in ["x", "y", "z"] { watches.allow(folder) }
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "x", "y", "z"] })
        #expect(await log.wait { _ in watcher.coverage.snapshot.unwatchedFolders == 0 })
        #expect(await log.wait { _ in self.capture.count(.notice, "every folder is watched again") == 1 }, "\(capture.text)")
        #expect(capture.count(.warning, "more than 2 folders") == 1, "\(capture.text)")
    }
}

/// Issue 11 item 6: a hard link into the tree makes no close and no rename; before, it was never
/// seen. A file created and still being written must still wait for its close.
@Suite final class HardLinkWatchTests {
    let sandbox: WatchSandbox
    let log = WatchEventLog()
    var watcher: FolderWatcher?

    init() throws { sandbox = try WatchSandbox("hardlinks") }

    deinit {
        watcher?.stop()
        sandbox.remove()
    }

    @Test func aHardLinkIsReportedAndAFileBeingWrittenIsNot() async throws {
        try sandbox.mkdir("sub")
        try sandbox.write("original.jpg", in: sandbox.outside)
        try sandbox.write("sub/inside.png")
        let log = self.log
        let watcher = try FolderWatcher(root: try AssetRoot(path: sandbox.root), log: .discard, rootPollSeconds: 0.05) { log.append($0) }
        self.watcher = watcher
        try watcher.start()

        #expect(link(sandbox.outside + "/original.jpg", sandbox.root + "/linked.jpg") == 0)
        #expect(link(sandbox.root + "/sub/inside.png", sandbox.root + "/sub/also.png") == 0)
        #expect(await log.wait { Set($0).isSuperset(of: [.changed(path: "linked.jpg"), .changed(path: "sub/also.png")]) }, "\(log.snapshot)")

        // Created with one link and still open for writing: nothing until the close.
        let path = sandbox.root + "/sub/writing.jpg"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        let data = [UInt8](repeating: 7, count: 512)
        #expect(write(fd, data, data.count) == data.count)
        try sandbox.write("sentinel.jpg")
        #expect(await log.wait(for: .changed(path: "sentinel.jpg")))
        #expect(!log.snapshot.contains(.changed(path: "sub/writing.jpg")), "reported before its close: \(log.snapshot)")
        close(fd)
        #expect(await log.wait(for: .changed(path: "sub/writing.jpg")))
        try sandbox.write("sentinel2.jpg")
        #expect(await log.wait(for: .changed(path: "sentinel2.jpg")))
        #expect(log.snapshot.filter { $0 == .changed(path: "sub/writing.jpg") }.count == 1)
        // A symlink is no hard link (and no asset).
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/symlink.jpg", withDestinationPath: sandbox.root + "/linked.jpg")
        try sandbox.write("sentinel3.jpg")
        #expect(await log.wait(for: .changed(path: "sentinel3.jpg")))
        #expect(!log.snapshot.contains(.changed(path: "symlink.jpg")))
    }
}
