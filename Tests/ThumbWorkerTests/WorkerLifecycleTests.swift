import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbWorker
#if canImport(Glibc)
import Glibc
#endif

/// Cancellation across the process boundary, the restart backoff, a worker that died idle.
@Suite(.serialized) struct WorkerLifecycleTests {
    static let largePhoto = WorkerFixture.corpusFile("large-photos/exif-py__Xiaomi_Mi_9T_KeyError.jpg")

    @Test func cancelFromAnotherThreadStopsTheRunningDecode() throws {
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        try supervisor.start()
        let pid = supervisor.currentPID
        let requests = [ThumbnailRequest(kind: WorkerFixture.large, scale: 2)]
        let done = Atomic<Bool>(false)
        // Cancels again and again until the render returns: only a cancel that lands while the
        // request runs counts (one before it starts is a no-op), and the decode takes far longer
        // than one period.
        let canceller = Thread {
            while !done.load(ordering: .acquiring) {
                supervisor.cancelCurrent()
                usleep(1_000)
            }
        }
        canceller.start()
        let outcome = try WorkerFixture.render(supervisor, Self.largePhoto, requests: requests)
        done.store(true, ordering: .releasing)
        let answer = try WorkerFixture.answer(outcome)
        #expect(WorkerFixture.sharedFailure(answer) == .imaging(.cancelled))
        // A cancel is not a death: the same worker renders the same file to the end next.
        #expect(supervisor.currentPID == pid)
        let full = try WorkerFixture.answer(try WorkerFixture.render(supervisor, Self.largePhoto, requests: requests))
        #expect(full.results.allSatisfy { (try? $0.get()) != nil })
        #expect(supervisor.currentPID == pid)
    }

    @Test func backoffGrowsWhileDeathsComeAndResetsOnSuccess() throws {
        let backoff = WorkerBackoff()
        #expect((0...4).map { backoff.delaySeconds(afterDeathsInARow: $0) } == [0, 0, 0.010, 0.020, 0.040])
        #expect(backoff.delaySeconds(afterDeathsInARow: 8) == 0.640)
        #expect(backoff.delaySeconds(afterDeathsInARow: 9) == 1 && backoff.delaySeconds(afterDeathsInARow: 1000) == 1)

        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        let trap = try WorkerFixture.faultFile("trap")
        defer { try? FileManager.default.removeItem(atPath: trap) }
        for _ in 0..<3 { _ = try WorkerFixture.render(supervisor, trap) }
        #expect(supervisor.backoffSeconds == 0.020)
        _ = try WorkerFixture.answer(try WorkerFixture.render(supervisor, WorkerFixture.corpusFile("libjpeg-turbo-testimages/testorig.jpg")))
        #expect(supervisor.backoffSeconds == 0)
    }

    /// A worker that died idle (killed from outside) costs no request: the supervisor notices at
    /// the send, respawns and renders.
    @Test func workerKilledWhileIdleIsReplacedWithoutFailingTheRequest() throws {
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters)
        defer { supervisor.shutdown() }
        try supervisor.start()
        let pid = try #require(supervisor.currentPID)
        kill(pid, SIGKILL)
        usleep(50_000)
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, WorkerFixture.corpusFile("libjpeg-turbo-testimages/testorig.jpg")))
        #expect(answer.results.allSatisfy { (try? $0.get()) != nil })
        #expect(supervisor.currentPID != pid && WorkerFixture.isGone(pid))
        #expect(counters.snapshot().count(.crashedBySignal) == 1)
    }
}
