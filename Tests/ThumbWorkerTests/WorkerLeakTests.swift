import Foundation
import Testing
import ThumbImaging
@testable import ThumbWorker
#if canImport(Glibc)
import Glibc
#endif

/// No descriptor and no zombie left behind by crashing or lying workers. Each check runs in a
/// child process of its own (an exit test), where nothing but it opens descriptors: in the test
/// process other suites open files and sockets all the while.
@Suite struct WorkerLeakTests {
    @Test func fiftyCrashesLeakNoDescriptorAndNoZombie() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            WorkerLeakTests.check(WorkerLeakTests.crashStorm())
        }
        WorkerLeakTests.report(result)
    }

    @Test func hostileAnswersLeakNoDescriptor() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            WorkerLeakTests.check(WorkerLeakTests.hostileAnswers())
        }
        WorkerLeakTests.report(result)
    }

    /// What the child found, as an issue of this test.
    static func report(_ result: ExitTest.Result?) {
        let problems = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!problems.contains("\n"), "\(problems)")
    }

    /// Exits 0 when `problems` is empty, else prints them and exits 1.
    static func check(_ problems: [String]) {
        for problem in problems { FileHandle.standardError.write(Data((problem + "\n").utf8)) }
        exit(problems.isEmpty ? 0 : 1)
    }

    /// 50 `trap` renders in a row (a short backoff: the storm tests leaks, not the waiting).
    static func crashStorm() -> [String] {
        do {
            let counters = WorkerRestartCounters()
            let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters,
                                                    backoff: WorkerBackoff(firstDelaySeconds: 0.001, maxDelaySeconds: 0.002))
            let trap = try WorkerFixture.faultFile("trap")
            defer { try? FileManager.default.removeItem(atPath: trap) }
            let before = WorkerFixture.openDescriptorCount()
            var pids: [Int32] = []
            var problems: [String] = []
            for _ in 0..<50 {
                guard case .crashed(let death) = try WorkerFixture.render(supervisor, trap) else {
                    problems.append("a trap that did not crash")
                    continue
                }
                pids.append(death.pid)
            }
            supervisor.shutdown()
            let after = WorkerFixture.openDescriptorCount()
            if after != before { problems.append("\(before) descriptors open before the storm, \(after) after") }
            if Set(pids).count != 50 { problems.append("\(Set(pids).count) workers for 50 crashes") }
            let snapshot = counters.snapshot()
            if snapshot.count(.crashedBySignal) != 50 || snapshot.spawns != 50 { problems.append("counters: \(snapshot)") }
            for pid in pids {
                var status: Int32 = 0
                if !(waitpid(pid, &status, WNOHANG) == -1 && errno == ECHILD) || !WorkerFixture.isGone(pid) {
                    problems.append("worker \(pid) is not reaped")
                }
            }
            return problems
        } catch {
            return ["\(error)"]
        }
    }

    /// A worker that pushes a descriptor at the daemon and one that sends a malformed answer:
    /// both killed, the pushed descriptor closed.
    static func hostileAnswers() -> [String] {
        do {
            let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
            try supervisor.start()
            let before = WorkerFixture.openDescriptorCount()
            var problems: [String] = []
            for word in ["send-descriptor", "malformed-answer"] {
                let path = try WorkerFixture.faultFile(word)
                defer { try? FileManager.default.removeItem(atPath: path) }
                guard case .crashed(let death) = try WorkerFixture.render(supervisor, path), case .malformedAnswer = death.symptom else {
                    problems.append("\(word) was not refused as malformed")
                    continue
                }
            }
            // A live worker again: its socket and pidfd in place of the first one's.
            try supervisor.start()
            let after = WorkerFixture.openDescriptorCount()
            if after != before { problems.append("\(before) descriptors open with the first worker, \(after) with the third") }
            supervisor.shutdown()
            return problems
        } catch {
            return ["\(error)"]
        }
    }
}
