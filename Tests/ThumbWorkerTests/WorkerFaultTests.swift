import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
import ThumbSystem
@testable import ThumbWorker
#if canImport(Glibc)
import Glibc
#endif

/// The test worker told to misbehave (Tests/TestWorker/FaultHook.swift): each fault costs its one
/// request, the worker is reaped and the next render on the same supervisor works.
@Suite(.serialized) struct WorkerFaultTests {
    let counters = WorkerRestartCounters()
    let supervisor: RenderWorkerSupervisor
    let goodFile = WorkerFixture.corpusFile("libjpeg-turbo-testimages/testorig.jpg")

    init() throws {
        supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters)
    }

    /// The fault's outcome, with the pid of the worker that met it.
    func fault(_ word: String, deadlineSeconds: Double = 30) throws -> (outcome: WorkerOutcome, pid: Int32, seconds: Double) {
        try supervisor.start()
        let pid = try #require(supervisor.currentPID)
        let path = try WorkerFixture.faultFile(word)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let start = ContinuousClock.now
        let outcome = try WorkerFixture.render(supervisor, path, deadlineSeconds: deadlineSeconds)
        return (outcome, pid, RenderWorker.seconds(since: start))
    }

    /// The supervisor renders a real file again, in a new worker when `respawned`.
    func expectWorks(after pid: Int32, respawned: Bool = true) throws {
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, goodFile), "after the fault")
        #expect(answer.results.allSatisfy { (try? $0.get()) != nil })
        if respawned {
            #expect(supervisor.currentPID != pid)
            #expect(WorkerFixture.isGone(pid), "worker \(pid) is reaped")
        } else {
            #expect(supervisor.currentPID == pid)
        }
    }

    func death(_ outcome: WorkerOutcome) throws -> WorkerDeath {
        guard case .crashed(let death) = outcome else { throw TestFailure("expected a dead worker, got \(outcome)") }
        return death
    }

    @Test func trapCrashesWithTheSignalNamed() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("trap")
        let death = try death(outcome)
        #expect(death.pid == pid)
        #expect(death.ending == .signalled(signal: SIGILL) || death.ending == .signalled(signal: SIGTRAP), "\(death)")
        #expect(death.symptom == .closedSocket && !death.killedByDaemon, "\(death)")
        #expect(death.restartReason == .crashedBySignal)
        #expect(death.description.contains(death.ending.signalName ?? "?"), "\(death.description)")
        #expect(counters.snapshot().count(.crashedBySignal) == 1)
        try expectWorks(after: pid)
    }

    @Test func aDeadlineThatIsNotANumberLeavesNoTimeAndDoesNotTrap() throws {
        defer { supervisor.shutdown() }
        try supervisor.start()
        let start = ContinuousClock.now
        let outcome = try WorkerFixture.render(supervisor, goodFile, deadlineSeconds: .nan)
        if case .rendered = outcome { Issue.record("rendered within no time at all: \(outcome)") }
        #expect(RenderWorker.seconds(since: start) < 5)
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, goodFile), "after the NaN deadline")
        #expect(answer.results.allSatisfy { (try? $0.get()) != nil })
    }

    @Test func loopIsKilledAtItsDeadline() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, seconds) = try fault("loop", deadlineSeconds: 1)
        guard case .timedOut(let waited, let cpu) = outcome else { throw TestFailure("expected a timeout, got \(outcome)") }
        #expect(waited >= 1 && seconds < 2, "answered after \(seconds) s")
        // Counted, whatever share of the two shared cores the spinning worker got.
        #expect(cpu > 0.05, "the spinning worker spent \(cpu) s of CPU")
        #expect(WorkerFixture.isGone(pid), "the looping worker is killed and reaped")
        #expect(counters.snapshot().count(.timedOut) == 1)
        try expectWorks(after: pid)
    }

    @Test func unboundedAllocationStopsAtTheMemoryLimit() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("alloc")
        switch outcome {
        case .crashed(let death):
            // The runtime's own abort on a failed allocation, never seccomp's SIGSYS (a call missing from the list).
            #expect(death.ending != .signalled(signal: SIGSYS) && !death.killedByDaemon, "\(death)")
            #expect(death.restartReason == .crashedBySignal, "\(death)")
        case .rendered(let answer):
            #expect(WorkerFixture.sharedFailure(answer) != nil, "a typed failure for every request")
        default:
            Issue.record("unexpected \(outcome)")
        }
        try expectWorks(after: pid)
    }

    @Test func exitMidAnswerIsACrashMidAnswer() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("exit-mid-answer")
        let death = try death(outcome)
        guard case .closedMidAnswer(let received) = death.symptom else { throw TestFailure("\(death)") }
        #expect(received > WorkerFrameHeader.byteCount, "half a frame: header and part of the payload (\(received) bytes)")
        #expect(death.ending == .exited(status: 3) && death.restartReason == .exited, "\(death)")
        #expect(death.description.contains("mid-answer"), "\(death.description)")
        try expectWorks(after: pid)
    }

    /// Issue 9, requirement 2: the worker cannot open a file or a socket.
    @Test func workerCannotOpenAFileOrASocket() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("open-file")
        let answer = try WorkerFixture.answer(outcome)
        #expect(WorkerFixture.sharedFailure(answer) == .imaging(.undecodable(reason: "open: EPERM; openat2: EPERM; socket: EPERM")))
        // A refused call fails the request, not the worker.
        try expectWorks(after: pid, respawned: false)
    }

    @Test func workerHoldsOnlyItsStandardDescriptorsAndSocket() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("descriptors")
        let answer = try WorkerFixture.answer(outcome)
        guard case .imaging(.undecodable(let reason)) = WorkerFixture.sharedFailure(answer) else {
            throw TestFailure("\(answer.results)")
        }
        let open = reason.replacingOccurrences(of: "descriptors: ", with: "").split(separator: " ").map(String.init)
        // The source was read and closed before the hook ran; the cancel page is mapped, its memfd closed.
        #expect(open.map { $0.split(separator: ":")[0] } == ["0", "1", "2", "3"], "\(reason)")
        #expect(open.first == "0:chr" && open.dropFirst().first == "1:chr" && open.last == "3:sock", "\(reason)")
        try expectWorks(after: pid, respawned: false)
    }

    @Test func execKillsTheWorker() throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault("exec")
        let death = try death(outcome)
        #expect(death.ending == .signalled(signal: SIGSYS), "\(death)")
        try expectWorks(after: pid)
    }

    @Test func workerCannotSignalAnotherProcess() throws {
        defer { supervisor.shutdown() }
        let bystander = try ChildProcess("/bin/sleep", ["30"])
        defer { bystander.signal(SIGTERM) }
        let (outcome, pid, _) = try fault("signal \(bystander.pid)")
        let death = try death(outcome)
        #expect(death.ending == .signalled(signal: SIGSYS), "\(death)")
        #expect(bystander.isRunning, "the process the worker tried to signal still runs")
        try expectWorks(after: pid)
    }

    /// A compromised worker's lies: a malformed answer, a descriptor pushed at the daemon. The
    /// worker is killed (it still runs, waiting). WorkerLeakTests shows the pushed descriptor is closed.
    @Test(arguments: ["malformed-answer", "send-descriptor"])
    func hostileAnswerKillsTheWorker(_ word: String) throws {
        defer { supervisor.shutdown() }
        let (outcome, pid, _) = try fault(word)
        let death = try death(outcome)
        guard case .malformedAnswer(let reason) = death.symptom else { throw TestFailure("\(death)") }
        #expect(reason.contains(word == "send-descriptor" ? "frame.descriptors" : "answer.cpuSeconds"), "\(reason)")
        #expect(death.killedByDaemon && death.ending == .signalled(signal: SIGKILL) && death.restartReason == .malformedAnswer, "\(death)")
        #expect(counters.snapshot().count(.malformedAnswer) == 1)
        try expectWorks(after: pid)
    }
}
