import Foundation
import Testing
@testable import ThumbServer

/// Cache administration: `GET /v1/cache/stats` and `DELETE /v1/cache` on a running daemon, and
/// `thumbd cache stats|purge|verify` on its folder once it has stopped (refused while it runs).
@Suite("thumbd serve and thumbd cache: cache administration")
struct ServeCacheAdminTests {
    static let assets = [
        "ring.png": ServePaths.samples + "/p3-color-ring-alpha.png",
        "album/a.jpg": ServePaths.samples + "/landscape-exif6.jpg",
        "album/b.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
        "album0/c.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png",
    ]

    func diskEntries(_ daemon: ServeDaemon) throws -> Int {
        let stats = try daemon.request("/v1/cache/stats")
        #expect(stats.status == 200, "\(stats.summary)")
        return try #require((stats.json["disk"] as? [String: Any])?["entries"] as? Int, "\(stats.summary)")
    }

    @Test("stats count what was rendered; a purge by asset, folder or kind removes it from disk and memory, and it renders again")
    func statsAndPurge() throws {
        let daemon = try ServeDaemon(assets: Self.assets)
        try daemon.start()
        for path in Self.assets.keys.sorted() {
            #expect(try daemon.request("/v1/thumbnails/large/\(path)").status == 200)
        }
        try daemon.waitForMetrics("four renders") { $0["thumbd_render_seconds_count"] == 4 }
        #expect(try diskEntries(daemon) == 4)
        let stats = try daemon.request("/v1/cache/stats")
        let disk = try #require(stats.json["disk"] as? [String: Any])
        #expect(disk["assets"] as? Int == 4 && (disk["bytes"] as? Int ?? 0) > 0 && disk["budgetBytes"] as? Int != nil, "\(stats.summary)")
        #expect((stats.json["memory"] as? [String: Any])?["entries"] as? Int == 4, "\(stats.summary)")

        let one = try daemon.request("/v1/cache?asset=ring.png", method: "DELETE")
        #expect(one.status == 200 && (one.json["removed"] as? [String: Any])?["entries"] as? Int == 1, "\(one.summary)")
        // The folder "album", not "album0" beside it; percent-encoded like any query value.
        let folder = try daemon.request("/v1/cache?prefix=album%2F", method: "DELETE")
        #expect(folder.status == 200 && (folder.json["removed"] as? [String: Any])?["entries"] as? Int == 2, "\(folder.summary)")
        #expect((folder.json["selection"] as? [String: String])?["prefix"] == "album")
        #expect(try diskEntries(daemon) == 1)
        // Gone from memory too: asked again, it is rendered again (a hit would not count a render).
        #expect(try daemon.request("/v1/thumbnails/large/album/b.png").status == 200)
        #expect(try daemon.request("/v1/thumbnails/large/album0/c.png").status == 200)
        try daemon.waitForMetrics("a fifth render") { $0["thumbd_render_seconds_count"] == 5 }
        #expect(try diskEntries(daemon) == 2)
        // By kind: `normal`'s one thumbnail goes, `large`'s two stay.
        #expect(try daemon.request("/v1/thumbnails/normal/album/b.png").status == 200)
        try daemon.waitForMetrics("a sixth render") { $0["thumbd_render_seconds_count"] == 6 }
        let byKind = try daemon.request("/v1/cache?kind=normal", method: "DELETE")
        #expect(byKind.status == 200 && (byKind.json["removed"] as? [String: Any])?["entries"] as? Int == 1, "\(byKind.summary)")
        #expect((byKind.json["selection"] as? [String: String])?["kind"] == "normal")
        #expect(try diskEntries(daemon) == 2)
        let unknownKind = try daemon.request("/v1/cache?kind=nope", method: "DELETE")
        #expect(unknownKind.status == 400 && unknownKind.json["error"] as? String == "badKind", "\(unknownKind.summary)")

        for (query, message) in [("", "exactly one of"), ("asset=a&prefix=b", "exactly one of"), ("prefix=%2F", "must name a folder"),
                                 ("asset=", "1 to"), ("kind=large&asset=a", "exactly one of"), ("size=1", "unknown parameter"),
                                 ("asset=%00", "NUL")] {
            let refused = try daemon.request("/v1/cache?\(query)", method: "DELETE")
            #expect(refused.status == 400, "\(query): \(refused.summary)")
            #expect((refused.json["message"] as? String)?.contains(message) == true, "\(query): \(refused.summary)")
        }
        let wrong = try daemon.request("/v1/cache", method: "POST", body: "{}")
        #expect(wrong.status == 405 && wrong.headers["allow"] == "DELETE", "\(wrong.summary)")

        // Without a daemon: refused while it runs (the cache is its), then stats, purge, verify.
        let cache = daemon.directory + "/cache"
        let busy = try ServeOwnershipTests.runBeside(daemon, ["cache", "stats", "--cache", cache], name: "busy")
        #expect(busy.status == 75 && busy.log.contains("/v1/cache/stats"), "\(busy)")
        #expect(daemon.stop() == 0)
        let counted = try Self.cacheCommand(daemon, ["stats", "--cache", cache, "--json"])
        #expect(counted["entries"] == 2 && counted["assets"] == 2, "\(counted)")
        let purged = try Self.cacheCommand(daemon, ["purge", "--cache", cache, "--asset", "album0/c.png", "--json"])
        #expect(purged["entries"] == 1, "\(purged)")
        // A cache whose files and index disagree: a file removed behind the index's back.
        var files: [String] = []
        for shard in try FileManager.default.contentsOfDirectory(atPath: cache) where shard.count == 2 {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: cache + "/" + shard)) ?? [] {
                files.append(cache + "/" + shard + "/" + name)
            }
        }
        let file = try #require(files.first, "the cache keeps one thumbnail file")
        try FileManager.default.removeItem(atPath: file)
        let verified = try Self.cacheCommand(daemon, ["verify", "--cache", cache, "--json"])
        #expect(verified["rowsRemoved"] == 1 && verified["entries"] == 0, "\(verified)")
        #expect(try Self.cacheCommand(daemon, ["verify", "--cache", cache, "--json"])["rowsRemoved"] == 0)
        let noKind = try ServeOwnershipTests.runBeside(daemon, ["cache", "purge", "--cache", cache, "--config", daemon.directory + "/thumbd.json",
                                                                "--kind", "nope"], name: "no-kind")
        #expect(noKind.status == 64 && noKind.log.contains("no such kind"), "\(noKind)")
        let usage = try ServeOwnershipTests.runBeside(daemon, ["cache", "purge", "--cache", cache], name: "usage")
        #expect(usage.status == 64 && usage.log.contains("exactly one of --asset PATH, --prefix FOLDER or --kind KIND"), "\(usage)")
    }

    /// `thumbd cache ARGUMENTS` (exit 0), its JSON answer.
    static func cacheCommand(_ daemon: ServeDaemon, _ arguments: [String]) throws -> [String: Int] {
        let name = "cache-\(arguments[0])-\(UUID().uuidString.prefix(6))"
        let run = try ServeOwnershipTests.runBeside(daemon, ["cache"] + arguments, name: name)
        try #require(run.status == 0, "thumbd cache \(arguments): \(run)")
        let output = try String(contentsOfFile: daemon.directory + "/\(name).out", encoding: .utf8)
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8))
        return try #require(object as? [String: Int], "thumbd cache \(arguments) printed \(output)")
    }

    @Test("issue 23, finding 3: a purge keeps the assets' remembered failures unless failures=true")
    func purgeKeepsFailuresUnlessAsked() throws {
        let daemon = try ServeDaemon(assets: ["bad/x.jpg": ServePaths.samples + "/LICENSES.md"])
        try daemon.start()
        defer { _ = daemon.stop() }
        func failures() throws -> Int {
            let stats = try daemon.request("/v1/cache/stats")
            return try #require((stats.json["disk"] as? [String: Any])?["failures"] as? Int, "\(stats.summary)")
        }
        #expect(try daemon.request("/v1/thumbnails/large/bad/x.jpg").status == 415)
        try servePoll(timeout: 10, "the failure remembered") { try failures() == 1 }
        // On b259acf every purge removed it: a file that crashes workers then crashed a fresh one per request.
        #expect(try daemon.request("/v1/cache?asset=bad/x.jpg", method: "DELETE").status == 200)
        #expect(try daemon.request("/v1/cache?prefix=bad", method: "DELETE").status == 200)
        #expect(try failures() == 1, "a purge keeps negative entries")
        #expect(try daemon.request("/v1/cache?prefix=bad&failures=maybe", method: "DELETE").status == 400)
        #expect(try daemon.request("/v1/cache?prefix=bad&failures=true", method: "DELETE").status == 200)
        #expect(try failures() == 0, "failures=true removes them")
    }
}
