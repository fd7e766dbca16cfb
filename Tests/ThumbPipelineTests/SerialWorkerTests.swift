import Foundation
import Synchronization
import Testing
import ThumbSystem

/// The house's serial worker and timers (ThumbSystem), which replaced GCD's serial queues,
/// `asyncAfter` and the request-deadline `DispatchSource`.
@Suite("serial worker and timers")
struct SerialWorkerTests {
    @Test("a serial worker runs items one at a time in the order handed; waitUntilIdle waits for all of them")
    func runsInOrder() {
        let worker = SerialWorker(name: "test-serial")
        let log = Mutex<(order: [Int], running: Int, mostAtOnce: Int)>(([], 0, 0))
        for item in 0..<200 {
            worker.submit {
                log.withLock { $0.running += 1; $0.mostAtOnce = max($0.mostAtOnce, $0.running) }
                if item % 50 == 0 { usleep(2_000) }  // a slow item: the next must still wait for it
                log.withLock { $0.order.append(item); $0.running -= 1 }
            }
        }
        worker.waitUntilIdle()
        let seen = log.withLock { $0 }
        #expect(seen.order == Array(0..<200))
        #expect(seen.mostAtOnce == 1)
        worker.close(joining: true)
    }

    @Test("nothing handed over is lost: a worker let go runs what it holds; after close, work runs on the caller's thread")
    func nothingIsLost() {
        let done = Condition(0)
        do {
            let worker = SerialWorker(name: "test-serial")
            for _ in 0..<100 { worker.submit { usleep(100); done.update { $0 += 1 } } }
        }
        #expect(done.wait(until: { $0 == 100 }, timeoutSeconds: 60))

        let worker = SerialWorker(name: "test-serial")
        worker.close(joining: true)
        let ranInline = Mutex(false)
        worker.submit { ranInline.withLock { $0 = true } }
        #expect(ranInline.withLock { $0 })
    }

    @Test("timers run in deadline order, and a newer, earlier timer is not held up by a later one")
    func timersRunByDeadline() {
        let timers = DeadlineTimers(name: "test-timers")
        let ran = Condition<[String]>([])
        timers.schedule(afterSeconds: 3600) { ran.update { $0.append("in an hour") } }
        timers.schedule(afterSeconds: 0.15) { ran.update { $0.append("third") } }
        timers.schedule(afterSeconds: 0.05) { ran.update { $0.append("second") } }
        timers.schedule(afterSeconds: 0) { ran.update { $0.append("first") } }
        timers.schedule(afterSeconds: .nan) { ran.update { $0.append("first, too") } }
        // Generous bound: these are due within 150 ms; the hour-long timer must not hold them up.
        #expect(ran.wait(until: { $0.count == 4 }, timeoutSeconds: 60))
        #expect(ran.withLock { $0 } == ["first", "first, too", "second", "third"])
        #expect(timers.pendingCount == 1)
    }
}
