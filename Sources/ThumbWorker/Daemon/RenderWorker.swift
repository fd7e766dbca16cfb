#if canImport(Glibc)
import Glibc
#endif
import CThumbWorker
import Synchronization
import ThumbSystem

/// One render worker process, from the daemon's side: spawned, said hello, renders one order at
/// a time. Used by one thread at a time; `cancelCurrent` from any thread. Once it has died or
/// been shut down it is spent (`isAlive` false): a supervisor spawns another.
package final class RenderWorker: @unchecked Sendable {
    package let pid: Int32
    /// The daemon's end of the socketpair (non-blocking, close-on-exec).
    let socket: FrameSocket
    /// Polls readable once the process has exited (nil on a kernel without pidfd_open).
    let processDescriptor: Int32?
    let page: CancelPage
    /// The read end of the worker's stderr pipe (non-blocking): `WorkerStderr` relays it.
    let stderr: Int32
    /// The request the worker holds (0: none): what `cancelCurrent` cancels.
    private let runningRequest = Atomic<UInt64>(0)

    // Touched only by the one thread using the worker.
    var nextRequestID: UInt64 = 1
    /// CPU the worker's answers accounted for, seconds (to tell what a dead worker wasted).
    var accountedCPUSeconds = 0.0
    /// Set once the process is reaped: the worker is spent.
    private(set) var ending: WorkerEnding?

    init(pid: Int32, socket: Int32, processDescriptor: Int32?, page: CancelPage, stderr: Int32) {
        self.pid = pid
        self.socket = FrameSocket(descriptor: socket)
        self.processDescriptor = processDescriptor
        self.page = page
        self.stderr = stderr
    }

    /// Hands on what the worker wrote to its stderr since the last relay.
    func relayStderr() { WorkerStderr.relay(from: stderr, pid: pid) }

    deinit { shutdown() }

    /// Not yet reaped: it may render.
    package var isAlive: Bool { ending == nil }

    /// Asks the running render to stop at its next checkpoint: its requests fail `.cancelled`.
    /// Harmless when nothing runs (request ids only grow, so no later request matches).
    package func cancelCurrent() {
        let running = runningRequest.load(ordering: .sequentiallyConsistent)
        if running != 0 { page.cancel(running) }
    }

    func beginRequest(_ id: UInt64) { runningRequest.store(id, ordering: .sequentiallyConsistent) }
    func endRequest() { runningRequest.store(0, ordering: .releasing) }

    /// Closes the socket, kills the worker's process group and reaps it: no zombie, no descriptor
    /// left. (An idle worker would exit on the closed socket by itself; SIGKILL makes the wait
    /// certain and short for one that is not idle.)
    @discardableResult
    package func shutdown() -> WorkerEnding {
        if let ending { return ending }
        return reap(kill: true).ending
    }

    /// Kills (when asked) and reaps the worker, closing its descriptors; how it ended and the CPU
    /// it spent since its last answer.
    func reap(kill: Bool) -> (ending: WorkerEnding, cpuSeconds: Double) {
        if let ending { return (ending, 0) }
        // Kill before closing: a worker waiting on its socket would see the close, exit by
        // itself first and hide that the daemon ended it (and why).
        if kill { Glibc.kill(-pid, SIGKILL) }
        close(socket.descriptor)
        var status: Int32 = 0
        var usage = rusage()
        let ended: WorkerEnding
        do throws(SystemError) {
            try systemCall("wait4 of render worker \(pid)") { wait4(pid, &status, 0, &usage) }
            ended = (status & 0x7f) == 0 ? .exited(status: (status >> 8) & 0xff) : .signalled(signal: status & 0x7f)
        } catch {
            ended = .unknown
        }
        if let processDescriptor { close(processDescriptor) }
        // Its last words (a sandbox step that failed, the reason it gave up) are in the pipe now.
        relayStderr()
        close(stderr)
        ending = ended
        let total = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return (ended, max(0, total - accountedCPUSeconds))
    }

    /// After its socket closed: waits up to `graceSeconds` for the process to exit by itself (it
    /// closes its descriptors just before it becomes a zombie), so that its own cause of death is
    /// what is reported; a worker still running after that is killed (and the kill is ours).
    func reapAfterSocketClosed(symptom: WorkerDeath.Symptom, graceSeconds: Double = 0.5) -> WorkerDeath {
        var exitedByItself = false
        if let processDescriptor {
            var entry = pollfd(fd: processDescriptor, events: Int16(POLLIN), revents: 0)
            let deadline = ContinuousClock.now + .seconds(graceSeconds)
            let ready = try? systemCall("poll of render worker \(pid)") {
                poll(&entry, 1, FrameSocket.milliseconds(until: deadline))
            }
            exitedByItself = (ready ?? 0) > 0
        }
        let (ending, cpu) = reap(kill: !exitedByItself)
        return WorkerDeath(pid: pid, symptom: symptom, ending: ending, killedByDaemon: !exitedByItself && ending == .signalled(signal: SIGKILL),
                           cpuSeconds: cpu)
    }

    /// Kills a worker that misbehaved while alive (a malformed answer, a failed socket).
    func killForMisbehaviour(symptom: WorkerDeath.Symptom) -> WorkerDeath {
        // It may have died on its own just before: its own ending is then what wait4 reports.
        let (ending, cpu) = reap(kill: true)
        return WorkerDeath(pid: pid, symptom: symptom, ending: ending, killedByDaemon: ending == .signalled(signal: SIGKILL), cpuSeconds: cpu)
    }
}
