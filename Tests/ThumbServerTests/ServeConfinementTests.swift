import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbPipeline
@testable import ThumbServer
#if canImport(Glibc)
import Glibc
#endif

/// What the daemon reads, and how it says why it did not: a FIFO swapped in cannot hang it
/// (issue 8 item 6), EACCES is the daemon's permission problem and says so, distinct from a
/// path out of the root, and a file being written while read is a transient 503 (item 14).
@Suite("thumbd serve: confined reads")
struct ServeConfinementTests {
    /// A request is resolved while its asset is a regular file and queued behind slow renders;
    /// then a FIFO takes the asset's name. Before, the render thread blocked in open() for good
    /// (every later miss was 504) and SIGTERM never completed; now the answer is a prompt 403 and
    /// the daemon stops cleanly.
    @Test("a FIFO swapped in for a queued asset: a prompt 403, and SIGTERM still exits 0")
    func fifoSwappedInForAQueuedAsset() throws {
        let photos = try ServePaths.largePhotos()
        let daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1),
                                     assets: ["p0.jpg": photos[0], "p7.jpg": photos[7],
                                              "small.png": ServePaths.samples + "/pngsuite-basn6a08-alpha.png"])
        try daemon.start()
        // Two full-size renders (about a second each) keep the one worker busy; the small request,
        // at prefetch priority, waits behind both: time enough to swap its file.
        let slow = try ServeCurl.startBatch(socket: daemon.socket, ["p0", "p7"].map { "/v1/thumbnails/xx-large/\($0).jpg?scale=4" })
        try daemon.waitForMetrics("the worker busy and a job queued") { $0["thumbd_running_renders"] == 1 && $0.queued("visible") == 1 }
        let small = ServeCurl.background(socket: daemon.socket, "/v1/thumbnails/large/small.png?priority=prefetch")
        try daemon.waitForMetrics("the small render queued") { $0.queued("prefetch") == 1 }
        let fifo = daemon.assets + "/small.png"
        #expect(unlink(fifo) == 0 && mkfifo(fifo, 0o644) == 0)
        // Whatever happens, let a reader stuck in open() go, so the test's daemon can be killed.
        defer {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
        }
        for result in try slow.finish() { #expect(result.status == 200, "\(result)") }
        let refused = try small.result(timeout: 20)
        #expect(refused.status == 403 && refused.errorCode == "forbidden" && refused.text.contains("not a regular file"), "\(refused.summary)")
        #expect(try daemon.request("/healthz").status == 200)
        let render = try daemon.request("/v1/thumbnails/normal/p0.jpg", timeout: 20)
        #expect(render.status == 200, "the render thread is free again: \(render.summary)")
        #expect(daemon.stop(timeout: 20) == 0, "SIGTERM did not complete:\n\(daemon.log)")
    }

    static var canDropPrivileges: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    }

    /// The daemon runs as `nobody` (setpriv), so that file modes apply to it. Before, EACCES on
    /// the file was 403 "forbidden" like a path out of the root, and EACCES on a folder was 404.
    @Test("EACCES is 403 permissionDenied, not forbidden nor 404",
          .enabled(if: canDropPrivileges, "needs root and setpriv(1) to run the daemon as nobody"))
    func permissionDeniedIsItsOwnAnswer() throws {
        let image = ServePaths.samples + "/pngsuite-basn6a08-alpha.png"
        let daemon = try ServeDaemon(assets: ["open.png": image, "secret.png": image, "private/inside.png": image])
        #expect(chmod(daemon.directory, 0o777) == 0)
        #expect(chmod(daemon.assets + "/secret.png", 0o600) == 0)
        #expect(chmod(daemon.assets + "/private", 0o700) == 0)
        let argv = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                    try ServePaths.thumbd(), "serve", "--config", daemon.configPath]
        let child = try ChildProcess(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment,
                                     stdout: .file(daemon.directory + "/stdout.log"), stderr: .file(daemon.logPath))
        try servePoll(timeout: 20, "the daemon as nobody:\n\(daemon.log)") {
            if let ending = child.ending { throw TestFailure("\(ending):\n\(daemon.log)") }
            return daemon.log.contains("<5>thumbd serving")
        }
        #expect(try daemon.request("/v1/thumbnails/large/open.png").status == 200)
        for path in ["secret.png", "private/inside.png"] {
            let response = try daemon.request("/v1/thumbnails/large/" + path)
            #expect(response.status == 403 && response.errorCode == "permissionDenied", "\(path): \(response.summary)")
            #expect(response.text.contains("ermission denied"), "\(path): \(response.summary)")
        }
        let outside = try daemon.request("/v1/thumbnails/large/%2e%2e/thumbd.json")
        #expect(outside.status == 403 && outside.errorCode == "forbidden", "\(outside.summary)")
        child.signal(SIGTERM)
        #expect(child.wait(timeout: 20)?.status == 0, "\(daemon.log)")
    }

    /// The HTTP side of the failure taxonomy this area adds (the pipeline tests make each happen).
    @Test("the answers: permissionDenied 403, assetChanging 503 + Retry-After, as=path of an unstored file 503")
    func answersForTheNewFailures() throws {
        func response(_ error: ThumbFailure) -> HTTPResponse {
            ThumbnailAPI.httpResponse(for: PipelineResponse(token: nil, result: .failure(error)), asPath: false, ifNoneMatch: nil)
        }
        func code(_ response: HTTPResponse) -> String? {
            ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any])?["error"] as? String
        }
        func header(_ response: HTTPResponse, _ name: String) -> String? { response.headers.first { $0.0 == name }?.1 }

        let denied = response(.permissionDenied(path: "a.jpg", reason: "Permission denied"))
        #expect(denied.status == 403 && code(denied) == "permissionDenied")
        let forbidden = response(.forbidden(path: "a.jpg", reason: "resolves outside the asset root"))
        #expect(forbidden.status == 403 && code(forbidden) == "forbidden")
        let changing = response(.assetChanging(path: "a.jpg", reason: "a.jpg grew while being read"))
        #expect(changing.status == 503 && code(changing) == "assetChanging" && header(changing, "Retry-After") == "1")

        let key = CacheKey(asset: AssetVersion(path: "a.jpg", size: 1, modifiedNanoseconds: 1, inode: 1, device: 1),
                           kind: .init(name: "k", widthPoints: 8, heightPoints: 8), scale: 1, encoder: .init())
        let thumbnail = CachedThumbnail(key: key, bytes: [1, 2, 3], filePath: "/nonexistent/\(key.digest).jpg", format: .jpeg,
                                        width: 8, height: 8, isStored: false)
        let unstored = ThumbnailAPI.httpResponse(for: PipelineResponse(token: 7, result: .success(thumbnail)), asPath: true, ifNoneMatch: nil)
        #expect(unstored.status == 503 && code(unstored) == "notStored" && header(unstored, "Retry-After") == "1")
        let bytes = ThumbnailAPI.httpResponse(for: PipelineResponse(token: 7, result: .success(thumbnail)), asPath: false, ifNoneMatch: nil)
        #expect(bytes.status == 200 && bytes.body == [1, 2, 3], "the bytes are served all the same")
    }
}
