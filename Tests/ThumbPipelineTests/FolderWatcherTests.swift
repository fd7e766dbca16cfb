import Foundation
import Synchronization
import Testing
@testable import ThumbPipeline
import ThumbSystem

/// Events a watcher delivered, and a polling wait that gives up after a timeout.
final class WatchEventLog: Sendable {
    private let events = Mutex<[FolderWatcher.Event]>([])

    func append(_ event: FolderWatcher.Event) { events.withLock { $0.append(event) } }

    var snapshot: [FolderWatcher.Event] { events.withLock { $0 } }

    /// Polls until `condition` holds on the events so far, or `timeout` passes; returns whether it held.
    func wait(timeout: Duration = .seconds(5), until condition: ([FolderWatcher.Event]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if condition(snapshot) { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func wait(for event: FolderWatcher.Event, timeout: Duration = .seconds(5)) async -> Bool {
        await wait(timeout: timeout) { $0.contains(event) }
    }
}

/// A temp folder holding the asset root (`root`) and a sibling outside it on the same filesystem.
struct WatchSandbox {
    let base: String
    var root: String { base + "/root" }
    var outside: String { base + "/outside" }

    init(_ label: String) throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/root", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/outside", withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: base) }

    func mkdir(_ relative: String, in folder: String? = nil) throws {
        try FileManager.default.createDirectory(atPath: (folder ?? root) + "/" + relative, withIntermediateDirectories: true)
    }

    /// open/write/close, so a watcher sees exactly one close-after-write.
    func write(_ relative: String, in folder: String? = nil, bytes: Int = 16, contents: [UInt8]? = nil) throws {
        let path = (folder ?? root) + "/" + relative
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError(operation: "open \(path)", errno: errno) }
        defer { close(fd) }
        let data = contents ?? [UInt8](repeating: 0xAB, count: bytes)
        guard Glibc.write(fd, data, data.count) == data.count else { throw SystemError(operation: "write \(path)", errno: errno) }
    }

    func rename(_ from: String, _ to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw SystemError(operation: "rename \(from) \(to)", errno: errno) }
    }
}

@Suite final class FolderWatcherTests {
    let sandbox: WatchSandbox
    let log = WatchEventLog()
    var watcher: FolderWatcher?
    var sentinels = 0

    init() throws {
        sandbox = try WatchSandbox("folderwatcher")
    }

    deinit {
        watcher?.stop()
        sandbox.remove()
    }

    @discardableResult
    func startWatcher(excluding excluded: [String] = [], log pipelineLog: PipelineLog = .discard) throws -> FolderWatcher {
        let root = try AssetRoot(path: sandbox.root, excluding: excluded.map { sandbox.root + "/" + $0 })
        let log = self.log
        let watcher = try FolderWatcher(root: root, log: pipelineLog, rootPollSeconds: 0.05) { log.append($0) }
        try watcher.start()
        self.watcher = watcher
        return watcher
    }

    /// Writes a fresh image at the root and waits for it: every event caused before it has then
    /// been delivered (events are delivered in order), so the log can be checked for absences.
    func flush() async throws {
        sentinels += 1
        let name = "sentinel-\(sentinels).png"
        try sandbox.write(name)
        #expect(await log.wait(for: .changed(path: name)), "sentinel \(name) never arrived")
    }

    /// The log without sentinel events.
    var events: [FolderWatcher.Event] {
        log.snapshot.filter {
            if case .changed(let path) = $0 { !path.hasPrefix("sentinel-") } else { true }
        }
    }

    @Test func tempThenRenameGivesOneChanged() async throws {
        try startWatcher()
        try sandbox.write(".a.jpg.tmp", bytes: 4096)
        try sandbox.rename(sandbox.root + "/.a.jpg.tmp", sandbox.root + "/a.jpg")
        #expect(await log.wait(for: .changed(path: "a.jpg")))
        try await flush()
        #expect(events == [.changed(path: "a.jpg")])
    }

    @Test func inPlaceWriteIsReportedAtClose() async throws {
        try startWatcher()
        let path = sandbox.root + "/b.JPEG"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        let data = [UInt8](repeating: 1, count: 1000)
        #expect(write(fd, data, data.count) == data.count)
        try await flush()
        #expect(events.isEmpty, "a file still open for writing must not be reported")
        #expect(write(fd, data, data.count) == data.count)
        close(fd)
        #expect(await log.wait(for: .changed(path: "b.JPEG")))
        try await flush()
        #expect(events == [.changed(path: "b.JPEG")])
    }

    /// The new formats' names are watched; a name without an extension counts only when its
    /// first bytes are an image's (the decoders sniff by content).
    @Test func newFormatsAndExtensionlessImagesAreSeen() async throws {
        try startWatcher()
        for name in ["c.webp", "d.GIF", "e.heic", "f.heif", "g.avif"] { try sandbox.write(name) }
        try sandbox.write("README", contents: Array("# notes about these photos\n".utf8))
        try sandbox.write("IMG_0042", contents: [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0, count: 12))
        try sandbox.write("z.txt")
        #expect(await log.wait(for: .changed(path: "IMG_0042")))
        try await flush()
        #expect(Set(events) == Set(["c.webp", "d.GIF", "e.heic", "f.heif", "g.avif", "IMG_0042"].map { FolderWatcher.Event.changed(path: $0) }),
                "\(events)")
    }

    @Test func deleteIsReportedRemoved() async throws {
        try sandbox.mkdir("x")
        try sandbox.write("x/gone.png")
        try startWatcher()
        #expect(unlink(sandbox.root + "/x/gone.png") == 0)
        #expect(await log.wait(for: .removed(path: "x/gone.png")))
        try await flush()
        #expect(events == [.removed(path: "x/gone.png")])
    }

    @Test func fileWrittenRightAfterMkdirIsSeen() async throws {
        let watcher = try startWatcher()
        // Many rounds: the file is usually written before the new folder's watch exists.
        var expected: [FolderWatcher.Event] = []
        for round in 0..<30 {
            try sandbox.mkdir("new\(round)")
            try sandbox.write("new\(round)/photo.jpg")
            expected.append(.changed(path: "new\(round)/photo.jpg"))
        }
        #expect(await log.wait { events in expected.allSatisfy(events.contains) })
        try await flush()
        #expect(Set(events) == Set(expected))
        #expect(watcher.watchedFolders.count == 31)
    }

    @Test func mkdirDashPThenFileIsSeen() async throws {
        let watcher = try startWatcher()
        var expected: [FolderWatcher.Event] = []
        for round in 0..<10 {
            try sandbox.mkdir("a\(round)/b/c")
            try sandbox.write("a\(round)/b/c/deep.png")
            expected.append(.changed(path: "a\(round)/b/c/deep.png"))
        }
        #expect(await log.wait { events in expected.allSatisfy(events.contains) })
        #expect(watcher.watchedFolders.contains("a9/b/c"))
        // The deepest folder's own watch works once established.
        try sandbox.write("a0/b/c/later.png")
        #expect(await log.wait(for: .changed(path: "a0/b/c/later.png")))
    }

    @Test func folderMovedInReportsEveryImage() async throws {
        try sandbox.mkdir("album/sub", in: sandbox.outside)
        try sandbox.write("album/1.jpg", in: sandbox.outside)
        try sandbox.write("album/sub/2.png", in: sandbox.outside)
        try sandbox.write("album/notes.txt", in: sandbox.outside)
        let watcher = try startWatcher()
        try sandbox.rename(sandbox.outside + "/album", sandbox.root + "/album")
        #expect(await log.wait { Set($0).isSuperset(of: [.changed(path: "album/1.jpg"), .changed(path: "album/sub/2.png")]) })
        try await flush()
        #expect(Set(events) == [.changed(path: "album/1.jpg"), .changed(path: "album/sub/2.png")])
        #expect(watcher.watchedFolders == ["", "album", "album/sub"])
        try sandbox.write("album/sub/3.png")
        #expect(await log.wait(for: .changed(path: "album/sub/3.png")))
    }

    @Test func folderMovedOutIsRemovedAndUnwatched() async throws {
        try sandbox.mkdir("old/inner")
        try sandbox.write("old/inner/a.jpg")
        let watcher = try startWatcher()
        #expect(watcher.watchedFolders == ["", "old", "old/inner"])
        try sandbox.rename(sandbox.root + "/old", sandbox.outside + "/old")
        #expect(await log.wait(for: .removedFolder(path: "old")))
        #expect(watcher.watchedFolders == [""])
        // Changes in the moved-away folder are no longer reported.
        try sandbox.write("old/inner/b.jpg", in: sandbox.outside)
        try await flush()
        #expect(events == [.removedFolder(path: "old")])
    }

    @Test func folderRenamedInsideRootFollowsNewPath() async throws {
        try sandbox.mkdir("before/sub")
        try sandbox.write("before/sub/a.jpg")
        let watcher = try startWatcher()
        try sandbox.rename(sandbox.root + "/before", sandbox.root + "/after")
        #expect(await log.wait { $0.contains(.removedFolder(path: "before")) && $0.contains(.changed(path: "after/sub/a.jpg")) })
        #expect(watcher.watchedFolders == ["", "after", "after/sub"])
        try sandbox.write("after/sub/b.jpg")
        #expect(await log.wait(for: .changed(path: "after/sub/b.jpg")))
        try await flush()
        #expect(events == [.removedFolder(path: "before"), .changed(path: "after/sub/a.jpg"), .changed(path: "after/sub/b.jpg")])
    }

    @Test func deletedFolderIsReportedAndItsWatchDropped() async throws {
        try sandbox.mkdir("d/e")
        try sandbox.write("d/e/x.png")
        let watcher = try startWatcher()
        try FileManager.default.removeItem(atPath: sandbox.root + "/d")
        #expect(await log.wait { $0.contains(.removedFolder(path: "d")) && $0.contains(.removedFolder(path: "d/e")) })
        try await flush()
        #expect(events.contains(.removed(path: "d/e/x.png")))
        #expect(watcher.watchedFolders == [""])
    }

    @Test func nonImagesHiddenAndExcludedAreIgnored() async throws {
        try sandbox.mkdir("cache/sub")
        try sandbox.mkdir(".hidden")
        try sandbox.mkdir("photos")
        let watcher = try startWatcher(excluding: ["cache"])
        #expect(watcher.watchedFolders == ["", "photos"])
        try sandbox.write("notes.txt")
        try sandbox.write("photo.jpg.part")
        try sandbox.write(".photo.jpg")
        try sandbox.write(".tmp.png")
        try sandbox.write("photos/.x.png.tmp")
        try sandbox.rename(sandbox.root + "/photos/.x.png.tmp", sandbox.root + "/photos/.y.png")
        try sandbox.write(".hidden/a.jpg")
        try sandbox.write("cache/a.jpg")
        try sandbox.write("cache/sub/b.png")
        try sandbox.mkdir(".staging")
        try sandbox.write(".staging/c.jpg")
        try sandbox.mkdir("cache/new")
        try sandbox.write("cache/new/d.jpg")
        try await flush()
        #expect(events.isEmpty)
        #expect(watcher.watchedFolders == ["", "photos"])
        // A hidden staging folder renamed into place is an ordinary new folder.
        try sandbox.rename(sandbox.root + "/.staging", sandbox.root + "/staged")
        #expect(await log.wait(for: .changed(path: "staged/c.jpg")))
    }

    @Test func symlinkedFolderIsNotWatched() async throws {
        try sandbox.mkdir("real", in: sandbox.outside)
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/link", withDestinationPath: sandbox.outside + "/real")
        let watcher = try startWatcher()
        #expect(watcher.watchedFolders == [""])
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/link2", withDestinationPath: sandbox.outside + "/real")
        try sandbox.write("real/a.jpg", in: sandbox.outside)
        try await flush()
        #expect(events.isEmpty)
        #expect(watcher.watchedFolders == [""])
    }

    @Test func stopReturnsPromptlyAndEndsDelivery() async throws {
        let watcher = try startWatcher()
        try await flush()
        let started = ContinuousClock.now
        watcher.stop()
        #expect(ContinuousClock.now - started < .seconds(1))
        let count = log.snapshot.count
        try sandbox.write("after-stop.jpg")
        watcher.stop()  // Idempotent.
        #expect(log.snapshot.count == count)
        #expect(throws: SystemError.self) { try watcher.start() }
    }

    @Test func startFailsWithoutRoot() throws {
        let root = try AssetRoot(path: sandbox.root)
        try FileManager.default.removeItem(atPath: sandbox.root)
        let watcher = try FolderWatcher(root: root) { _ in }
        #expect(throws: SystemError.self) { try watcher.start() }
        watcher.stop()
    }

    @Test func stopFromTheHandlerDoesNotDeadlock() async throws {
        let root = try AssetRoot(path: sandbox.root)
        let holder = Mutex<FolderWatcher?>(nil)
        let log = self.log
        let watcher = try FolderWatcher(root: root) { event in
            log.append(event)
            holder.withLock { $0 }?.stop()
        }
        holder.withLock { $0 = watcher }
        try watcher.start()
        try sandbox.write("one.jpg")
        #expect(await log.wait(for: .changed(path: "one.jpg")))
        holder.withLock { $0 = nil }
        watcher.stop()
    }

    @Test func deletedRootAsksForRescanAndKeepsRunning() async throws {
        try sandbox.mkdir("sub")
        try sandbox.write("sub/a.jpg")
        let watcher = try startWatcher()
        try FileManager.default.removeItem(atPath: sandbox.root)
        #expect(await log.wait(for: .rescan))
        #expect(log.snapshot.contains(.removed(path: "sub/a.jpg")))
        #expect(await log.wait { _ in watcher.watchedFolders.isEmpty })
        try sandbox.mkdir("")
        try sandbox.write("new.jpg")
        let started = ContinuousClock.now
        watcher.stop()
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func movedRootAsksForRescan() async throws {
        try sandbox.mkdir("sub")
        let watcher = try startWatcher()
        try sandbox.rename(sandbox.root, sandbox.outside + "/root")
        #expect(await log.wait(for: .rescan))
        #expect(await log.wait { _ in watcher.watchedFolders.isEmpty })
        try sandbox.write("root/sub/late.jpg", in: sandbox.outside)
        watcher.stop()
        #expect(!log.snapshot.contains(.changed(path: "sub/late.jpg")))
    }

    /// Issue 8 item 12: before, a root moved away and back left the watcher dead for good, silently.
    @Test func movedRootComesBackAndIsWatchedAgain() async throws {
        try sandbox.mkdir("sub")
        let capture = LogCapture()
        let watcher = try startWatcher(log: capture.log)
        try sandbox.rename(sandbox.root, sandbox.outside + "/root")
        #expect(await log.wait(for: .rescan))
        #expect(await log.wait { _ in watcher.watchedFolders.isEmpty })
        try sandbox.write("root/sub/away.jpg", in: sandbox.outside)
        try sandbox.rename(sandbox.outside + "/root", sandbox.root)
        #expect(await log.wait { $0.filter { $0 == .rescan }.count == 2 })
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "sub"] })
        try sandbox.write("sub/back.jpg")
        #expect(await log.wait(for: .changed(path: "sub/back.jpg")))
        #expect(!log.snapshot.contains(.changed(path: "sub/away.jpg")), "written while away: found by the rescan, not an event")
        #expect(capture.count(.warning, "was moved away: its watch is gone; looking for it every 0.05 s") == 1, "\(capture.text)")
        #expect(capture.count(.notice, "is back: watching it again") == 1, "\(capture.text)")
    }

    @Test func deletedRootRecreatedIsWatchedAgain() async throws {
        let capture = LogCapture()
        let watcher = try startWatcher(log: capture.log)
        try FileManager.default.removeItem(atPath: sandbox.root)
        #expect(await log.wait(for: .rescan))
        try sandbox.mkdir("")
        try sandbox.mkdir("later")
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "later"] })
        try sandbox.write("later/x.png")
        #expect(await log.wait(for: .changed(path: "later/x.png")))
        #expect(capture.count(.warning, "was deleted") == 1, "\(capture.text)")
        #expect(capture.count(.notice, "is back") == 1, "\(capture.text)")
    }

    /// A parent renamed moves the root without any event for the root itself: the periodic
    /// check of what is at the root's path notices.
    @Test func rootMovedWithItsParentIsNoticedAndReArmed() async throws {
        let capture = LogCapture()
        let watcher = try startWatcher(log: capture.log)
        let parent = sandbox.base + "-renamed"
        try sandbox.rename(sandbox.base, parent)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        #expect(await log.wait(for: .rescan))
        #expect(capture.count(.warning, "is no longer the folder watched at that path") == 1, "\(capture.text)")
        try sandbox.rename(parent, sandbox.base)
        #expect(await log.wait { $0.filter { $0 == .rescan }.count == 2 })
        try sandbox.write("again.jpg")
        #expect(await log.wait(for: .changed(path: "again.jpg")))
        _ = watcher
    }

    @Test func queueOverflowAsksForRescanAndResynchronizes() async throws {
        let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16384
        try #require(limit <= 100_000, "queue limit too large to overflow in a test")
        try sandbox.mkdir("kept")
        let root = try AssetRoot(path: sandbox.root)
        let gate = Mutex<Bool>(true)
        let log = self.log
        let capture = LogCapture()
        let watcher = try FolderWatcher(root: root, log: capture.log) { event in
            log.append(event)
            while gate.withLock({ $0 }) { usleep(1000) }  // Hold the thread while the queue fills.
        }
        try watcher.start()
        self.watcher = watcher
        try sandbox.write("first.jpg")
        #expect(await log.wait(for: .changed(path: "first.jpg")))
        // Alternate two files: identical consecutive events would be merged by the kernel.
        for _ in 0..<(limit / 2 + 100) {
            try sandbox.write("kept/a.jpg", bytes: 1)
            try sandbox.write("kept/b.jpg", bytes: 1)
        }
        try sandbox.mkdir("during")  // Its creation event is lost: the queue is full.
        gate.withLock { $0 = false }
        #expect(await log.wait(timeout: .seconds(20), until: { $0.contains(.rescan) }))
        #expect(await log.wait { _ in watcher.watchedFolders == ["", "during", "kept"] })
        try sandbox.write("during/x.png")
        #expect(await log.wait(for: .changed(path: "during/x.png")))
        // Lost events are an operator's business: logged at warning (once, however many overflows).
        #expect(capture.count(.warning, "queue of the folder watcher overflowed (1 time, events lost)") == 1, "\(capture.text)")
        // And counted, for /metrics (thumbd_watcher_queue_overflows_total).
        #expect(watcher.coverage.snapshot.queueOverflows == 1)
    }

    @Test func parsesRecordsWithPaddedNamesAndStopsAtTruncation() {
        func record(wd: Int32, mask: UInt32, cookie: UInt32, name: String, padTo: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            for value in [UInt32(bitPattern: wd), mask, cookie, UInt32(padTo)] {
                withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
            }
            var name = Array(name.utf8)
            name += [UInt8](repeating: 0, count: padTo - name.count)
            return bytes + name
        }
        var buffer = record(wd: 1, mask: 8, cookie: 0, name: "a.jpg", padTo: 16)
        buffer += record(wd: 2, mask: 0x8000, cookie: 0, name: "", padTo: 0)
        buffer += record(wd: 3, mask: 0x40, cookie: 7, name: "dir", padTo: 4)
        buffer += record(wd: 4, mask: 8, cookie: 0, name: "long-name.png", padTo: 32).prefix(30)  // truncated
        let events = buffer.withUnsafeBytes { FolderWatcher.parseEvents($0) }
        #expect(events == [
            FolderWatcher.RawEvent(wd: 1, mask: 8, cookie: 0, name: "a.jpg"),
            FolderWatcher.RawEvent(wd: 2, mask: 0x8000, cookie: 0, name: ""),
            FolderWatcher.RawEvent(wd: 3, mask: 0x40, cookie: 7, name: "dir"),
        ])
        var invalid = record(wd: 5, mask: 8, cookie: 0, name: "", padTo: 4)
        invalid.replaceSubrange(16..<18, with: [0xC3, 0x28])
        let bad = invalid.withUnsafeBytes { FolderWatcher.parseEvents($0) }
        #expect(bad == [FolderWatcher.RawEvent(wd: 5, mask: 8, cookie: 0, name: nil)])
        #expect([UInt8]().withUnsafeBytes { FolderWatcher.parseEvents($0) }.isEmpty)
        #expect([UInt8](repeating: 0, count: 15).withUnsafeBytes { FolderWatcher.parseEvents($0) }.isEmpty)
    }
}
