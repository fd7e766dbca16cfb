import Foundation
import Synchronization
import Testing
import ThumbTestSupport
@testable import ThumbBatch
#if canImport(Glibc)
import Glibc
#endif

/// A spool's producers are not trusted: what lands in `incoming/` is read only as a small
/// regular file (issue 23, finding 4).
@Suite struct SpoolJobFileTests {
    /// `claimNext` on a thread of its own: a claim that blocks (a FIFO read) fails the test
    /// instead of hanging the suite.
    static func claim(_ spool: SpoolFolder) -> SpoolFolder.Claim? {
        let result = Mutex<SpoolFolder.Claim?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let claim = spool.claimNext()
            result.withLock { $0 = claim }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else { return nil }
        return result.withLock { $0 }
    }

    static func malformedReason(_ claim: SpoolFolder.Claim?) -> String? {
        guard case .malformed(_, let reason)? = claim else { return nil }
        return reason
    }

    @Test func aSparseGiantIsRefusedFromItsFirstBytesPastTheLimit() throws {
        let scratch = try ScratchDirectory("batch-spool-sparse")
        let spool = try SpoolFolder(root: scratch.path("spool"))
        let path = spool.root + "/incoming/giant.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("{\"asset\": \"a.jpg\"}".utf8)))
        // 1 GiB by its size, nearly all a hole: reading it whole took the daemon past 1 GB RSS.
        #expect(truncate(path, 1 << 30) == 0)
        let reason = try #require(Self.malformedReason(Self.claim(spool)))
        #expect(reason == "the job file is over \(BatchJob.maxJobBytes) bytes", "\(reason)")
        #expect(Batch.names(spool.root + "/failed") == ["giant.json", "giant.json.reason"])
    }

    @Test func aSymlinkIsNotFollowedAndNothingOfItsTargetIsEchoed() throws {
        let scratch = try ScratchDirectory("batch-spool-symlink")
        let spool = try SpoolFolder(root: scratch.path("spool"))
        try scratch.write(#"{"private-key-name": "secret"}"#, to: scratch.path("outside/job.json"))
        #expect(symlink("../../outside/job.json", spool.root + "/incoming/x.json") == 0)
        let reason = try #require(Self.malformedReason(Self.claim(spool)))
        #expect(reason.contains("symbolic link"), "\(reason)")
        let written = try String(contentsOfFile: spool.root + "/failed/x.json.reason", encoding: .utf8)
        #expect(!written.contains("private-key-name"), "\(written)")
        // The target is untouched.
        #expect(try String(contentsOfFile: scratch.path("outside/job.json"), encoding: .utf8).contains("secret"))
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let scratch = try ScratchDirectory("batch-spool-fifo")
        let spool = try SpoolFolder(root: scratch.path("spool"))
        #expect(mkfifo(spool.root + "/incoming/pipe.json", 0o600) == 0)
        let claim = Self.claim(spool)
        let reason = try #require(Self.malformedReason(claim), "the claim blocked on the FIFO or read it as a job")
        #expect(reason.contains("a FIFO"), "\(reason)")
    }

    @Test func aJobAtTheLimitIsStillRead() throws {
        let scratch = try ScratchDirectory("batch-spool-limit")
        let spool = try SpoolFolder(root: scratch.path("spool"))
        let job = #"{"asset": "a.jpg"}"#
        let padded = job + String(repeating: " ", count: BatchJob.maxJobBytes - job.utf8.count)
        try scratch.write(padded, to: spool.root + "/incoming/edge.json")
        guard case .job(let parsed)? = Self.claim(spool) else {
            Issue.record("a job of exactly \(BatchJob.maxJobBytes) bytes was refused")
            return
        }
        #expect(parsed.asset == "a.jpg")
    }
}
