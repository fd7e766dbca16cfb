import Foundation
import Testing
import ThumbTestSupport

/// `thumbd batch` decodes in sandboxed workers as `serve` does: a file that kills its worker
/// fails that file only, and is remembered, so the next run does not render it again.
@Suite struct BatchSandboxTests {
    static func testWorker() throws -> String {
        try TestPaths.builtExecutable("thumbd-test-worker")
    }

    @Test func aWorkerCrashFailsItsFileOnlyAndIsRemembered() throws {
        let scratch = try ScratchDirectory("batch-sandbox")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_2.jpg", to: "good.jpg", in: assets)
        try scratch.write("THUMBD-FAULT:trap\n", to: assets + "/crash.jpg")
        let arguments = [assets, "--kinds", "large,normal", "--cache", scratch.path("cache"), "--out-dir", scratch.path("out"), "--json"]
        let environment = ["THUMBD_WORKER_EXECUTABLE": try Self.testWorker()]
        let first = try Batch.run(arguments, scratch: scratch, environment: environment)
        let summary = try #require(first.summary, first.describe)
        #expect(summary.rendered == 2 && summary.failed == 2, first.describe)
        #expect(summary.failures.allSatisfy { $0.asset == "crash.jpg" && $0.reason.contains("the renderer died on this file") }, first.describe)
        #expect(first.exitCode != 0 && first.signal == nil, first.describe)
        // Both kinds of the file came from one decode, so one worker died, not two; the second run
        // meets the negative entry (no worker harmed) and gives the same failure.
        let second = try Batch.run(arguments, scratch: scratch, environment: environment)
        let again = try #require(second.summary, second.describe)
        #expect(again.failed == 2 && again.upToDate == 2, second.describe)
        #expect(again.failures.allSatisfy { $0.reason.contains("the renderer died on this file") }, second.describe)
    }
}
