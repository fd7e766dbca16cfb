import Foundation
import Testing
@testable import ThumbBatch

/// A failure the table says a retry may cure sends a spool job round again, a bounded number of times.
@Suite("spool retries")
struct SpoolRetryTests {
    @Test("a retryable failure puts the job back in incoming/, then failed/ after maxTakeOvers tries")
    func retryableFailureGoesRoundThenFails() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("spool-retry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let spool = try SpoolFolder(root: root)
        try Data(#"{"asset": "a.jpg"}"#.utf8).write(to: URL(fileURLWithPath: root + "/incoming/j.json"))
        for attempt in 1...(SpoolFolder.maxTakeOvers + 1) {
            guard case .job(let job) = spool.claimNext(), let origin = job.origin else {
                Issue.record("attempt \(attempt): the job was not back in incoming/")
                return
            }
            spool.retryLater(claimedPath: origin, failure: "large@1x: cannot read: EIO")
        }
        #expect(FileManager.default.fileExists(atPath: root + "/failed/j.json"))
        let reason = try String(contentsOfFile: root + "/failed/j.json.reason", encoding: .utf8)
        #expect(reason.contains("EIO") && reason.contains("tried \(SpoolFolder.maxTakeOvers + 1) times"), "\(reason)")
        #expect((try FileManager.default.contentsOfDirectory(atPath: root + "/incoming")).isEmpty)
        #expect((try FileManager.default.contentsOfDirectory(atPath: root + "/claimed")).isEmpty)
    }
}
