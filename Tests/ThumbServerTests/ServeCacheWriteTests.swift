import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 8 item 13: with the cache folder removed or the disk full, every request is still
/// answered (from memory), `as=path` never names a file that is not there (503 `notStored` with
/// Retry-After instead), the folder is recreated, a full disk is met by eviction, and each
/// episode is one warning. Before, `as=path` answered 200 with paths never written, ENOSPC was
/// not logged and nothing was evicted.
@Suite("thumbd serve: honest answers when the cache cannot be written")
struct ServeCacheWriteTests {
    static var canMountTmpfs: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")
    }

    /// `as=path`: nil when refused 503 notStored (with Retry-After); else the path, which must
    /// exist (seen through `root`, the daemon's view of the filesystem) with the bytes' size.
    static func storedPath(_ daemon: ServeDaemon, _ path: String, root: String = "") throws -> String? {
        let response = try daemon.request(path + "?as=path")
        if response.status == 503 {
            #expect(response.errorCode == "notStored" && response.headers["retry-after"] != nil, "\(response.summary)")
            return nil
        }
        #expect(response.status == 200, "\(path): \(response.summary)")
        guard let file = response.json["path"] as? String, let bytes = response.json["bytes"] as? Int else {
            Issue.record("\(path): no path in \(response.summary)")
            return nil
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: root + file)[.size] as? Int) ?? nil
        #expect(size == bytes, "\(path): as=path named \(file), which is \(size.map { "\($0) bytes" } ?? "not there"), not \(bytes) bytes")
        return file
    }

    static func warnings(_ log: String, _ text: String) -> Int {
        log.split(separator: "\n").filter { $0.hasPrefix("<4>") && (text.isEmpty || $0.contains(text)) }.count
    }

    @Test("the cache folder removed while serving: 200 from memory, no path to nothing, folder recreated, one warning")
    func removedCacheFolder() throws {
        let photos = try ServePaths.largePhotos()
        let daemon = try ServeDaemon(assets: ["a.jpg": photos[0], "b.jpg": photos[1]])
        try daemon.start()
        let a = "/v1/thumbnails/large/a.jpg"
        #expect(try daemon.request(a).status == 200)
        #expect(try Self.storedPath(daemon, a) != nil)

        try FileManager.default.removeItem(atPath: daemon.cache)
        let again = try daemon.request(a)
        #expect(again.status == 200 && ServeImageHeader.size(again.body) != nil, "\(again.summary)")
        // Its file went with the folder: 503 until it is written again, then the new path.
        var restored: String?
        try servePoll(timeout: 10, "a.jpg's file written again") {
            restored = try Self.storedPath(daemon, a)
            return restored != nil
        }
        // A new render is stored in the recreated folder.
        #expect(try daemon.request("/v1/thumbnails/x-large/b.jpg").status == 200)
        #expect(try Self.storedPath(daemon, "/v1/thumbnails/x-large/b.jpg") != nil)
        #expect(FileManager.default.fileExists(atPath: daemon.cache + "/thumbd.lock"))
        #expect(Self.warnings(daemon.log, "was removed: recreated it") == 1, "\(daemon.log)")
        #expect(Self.warnings(daemon.log, "") == 1, "one warning for the episode:\n\(daemon.log)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    /// The cache on a 1 MiB tmpfs (mounted in a mount namespace of the daemon's own, so nothing
    /// of it is left on this machine), with a budget far above that: 40 thumbnails of camera
    /// photos, about 3 MB, fill it several times over.
    @Test("a full disk: every answer 200, as=path only for files that exist, eviction makes room, ENOSPC logged once",
          .enabled(if: canMountTmpfs, "needs root, unshare(1) and mount(1) to put the cache on a small tmpfs"))
    func fullDisk() throws {
        let photos = try ServePaths.largePhotos()
        let assets = Dictionary(uniqueKeysWithValues: photos.enumerated().map { ("p\($0.offset).jpg", $0.element) })
        let daemon = try ServeDaemon(config: ServeDaemon.config(extra: ["cache": ["directory": "cache", "diskBytes": 1 << 30,
                                                                                  "memoryBytes": 64 << 20]]),
                                     assets: assets)
        try FileManager.default.createDirectory(atPath: daemon.cache, withIntermediateDirectories: true)
        let argv = ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                    #"mount -t tmpfs -o size=1m thumbd-test-cache "$0" && exec "$@""#, daemon.cache,
                    try ServePaths.thumbd(), "serve", "--config", daemon.configPath]
        let child = try ChildProcess(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment,
                                     stdout: .file(daemon.directory + "/stdout.log"), stderr: .file(daemon.logPath))
        try servePoll(timeout: 20, "the daemon on a tmpfs cache:\n\(daemon.log)") {
            if let ending = child.ending { throw TestFailure("\(ending):\n\(daemon.log)") }
            return daemon.log.contains("<5>thumbd serving")
        }
        // The daemon's view: its mount namespace, through /proc (the tmpfs is not visible here).
        let root = "/proc/\(child.pid)/root"
        #expect(!FileManager.default.fileExists(atPath: daemon.cache + "/index.sqlite"), "the cache is not on the tmpfs")

        var stored = 0, notStored = 0
        var storedLate = 0
        let kinds = ["xx-large", "x-large", "large", "normal", "contact-avatar"]
        for (round, kind) in kinds.enumerated() {
            for index in 0..<photos.count {
                let path = "/v1/thumbnails/\(kind)/p\(index).jpg"
                let response = try daemon.request(path)
                #expect(response.status == 200 && ServeImageHeader.size(response.body) != nil, "\(path): \(response.summary)")
                if try Self.storedPath(daemon, path, root: root) != nil {
                    stored += 1
                    if round > 0 { storedLate += 1 }
                } else {
                    notStored += 1
                }
            }
        }
        var status = statvfs()
        #expect(statvfs(root + daemon.cache, &status) == 0 && status.f_blocks > 0 && status.f_blocks * status.f_frsize <= 1 << 20,
                "the cache is on the 1 MiB tmpfs")
        // The disk filled (xx-large of 8 photos alone is over 1 MiB) and eviction kept making room.
        #expect(Self.warnings(daemon.log, "cache disk full") == 1, "\(daemon.log)")
        #expect(storedLate > 0, "after the disk filled nothing was stored again: \(stored) stored, \(notStored) not\n\(daemon.log)")
        #expect(Self.warnings(daemon.log, "") <= 2, "warnings are per episode, not per request:\n\(daemon.log)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_cache_bytes{level=\"disk\"}"] <= Double(1 << 20), "\(metrics.text)")
        child.signal(SIGTERM)
        #expect(child.wait(timeout: 20)?.status == 0, "\(daemon.log)")
    }
}
