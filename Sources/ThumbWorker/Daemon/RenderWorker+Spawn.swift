#if canImport(Glibc)
import Glibc
#endif
import CThumbWorker
import ThumbSystem

extension RenderWorker {
    /// Starts a worker with `posix_spawn` (never fork: the daemon is a multithreaded Swift
    /// process) and waits for its hello, which it sends once its sandbox is in place. The worker
    /// gets its own process group, the socket on fd 3, the cancel page on 4, /dev/null on 0 and 1,
    /// a pipe of the daemon's on 2 (`WorkerStderr`), no other descriptor, default signal
    /// dispositions and an empty mask.
    package static func spawn(_ launch: WorkerLaunch) throws(WorkerSpawnError) -> RenderWorker {
        var ends: [Int32] = [-1, -1]
        do throws(SystemError) {
            try systemCall("socketpair") { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) }
        } catch {
            throw WorkerSpawnError(reason: error.description)
        }
        let (daemonEnd, workerEnd) = (ends[0], ends[1])
        let page: CancelPage
        let pageDescriptor: Int32
        do throws(SystemError) {
            (page, pageDescriptor) = try CancelPage.create()
        } catch {
            close(daemonEnd)
            close(workerEnd)
            throw WorkerSpawnError(reason: error.description)
        }
        var stderrEnds: [Int32] = [-1, -1]
        do throws(SystemError) {
            try systemCall("pipe2") { CThumb_PipeCloexecNonblocking(&stderrEnds) }
        } catch {
            close(daemonEnd)
            close(workerEnd)
            close(pageDescriptor)
            throw WorkerSpawnError(reason: error.description)
        }
        let spawned = Result { () throws(WorkerSpawnError) in
            try start(launch, socket: workerEnd, page: pageDescriptor, stderr: stderrEnds[1])
        }
        close(workerEnd)
        close(pageDescriptor)
        close(stderrEnds[1])
        let pid: pid_t
        do throws(WorkerSpawnError) {
            pid = try spawned.get()
        } catch {
            close(daemonEnd)
            close(stderrEnds[0])
            throw error
        }
        _ = fcntl(daemonEnd, F_SETFL, fcntl(daemonEnd, F_GETFL) | O_NONBLOCK)
        let processDescriptor = try? systemCall("pidfd_open") { CThumb_PidfdOpen(pid) }
        let worker = RenderWorker(pid: pid, socket: daemonEnd, processDescriptor: processDescriptor, page: page, stderr: stderrEnds[0])
        try worker.awaitHello(within: launch.helloTimeoutSeconds)
        return worker
    }

    /// posix_spawn with the descriptors, process group and signals described at `spawn`.
    private static func start(_ launch: WorkerLaunch, socket: Int32, page: Int32, stderr: Int32) throws(WorkerSpawnError) -> pid_t {
        // Copies at 5 or above, so that no dup2 onto 2, 3 or 4 overwrites another's source.
        let copies = [socket, page, stderr].map { fcntl($0, F_DUPFD_CLOEXEC, 5) }
        defer { copies.filter { $0 >= 0 }.forEach { close($0) } }
        guard copies.allSatisfy({ $0 >= 0 }) else { throw WorkerSpawnError(reason: "fcntl(F_DUPFD_CLOEXEC): \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        let flags = Int32(POSIX_SPAWN_SETPGROUP) | Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        let setUp = [
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0),
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0),
            posix_spawn_file_actions_adddup2(&actions, copies[0], RenderWorkerMain.socketDescriptor),
            posix_spawn_file_actions_adddup2(&actions, copies[1], RenderWorkerMain.cancelPageDescriptor),
            posix_spawn_file_actions_adddup2(&actions, copies[2], 2),
            CThumb_SpawnAddCloseFrom(&actions, 5),
            posix_spawnattr_setflags(&attributes, Int16(flags)),
            posix_spawnattr_setpgroup(&attributes, 0),
            posix_spawnattr_setsigmask(&attributes, &noSignals),
            posix_spawnattr_setsigdefault(&attributes, &allSignals),
        ]
        if let failed = setUp.first(where: { $0 != 0 }) {
            throw WorkerSpawnError(reason: "posix_spawn set-up: \(String(cString: strerror(failed)))")
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([launch.executablePath] + launch.arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = launch.environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        // posix_spawn returns its error number (it does not set errno).
        let status = posix_spawn(&pid, launch.executablePath, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw WorkerSpawnError(reason: "posix_spawn \(launch.executablePath): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// The hello: within `seconds`, from this very process, at this protocol version.
    private func awaitHello(within seconds: Double) throws(WorkerSpawnError) {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, min(seconds, 3600)) * 1000))
        let failure: String
        do throws(FrameTransportError) {
            let (frame, _) = try socket.receiveFrame(maxPayloadBytes: WorkerProtocol.maxHelloPayloadBytes, deadline: deadline)
            let hello: WorkerHello
            do throws(WorkerProtocolError) {
                hello = try WorkerHello.decode(frame: frame)
            } catch {
                throw FrameTransportError.malformed(error)
            }
            if hello.pid == pid { return }
            failure = "its hello names pid \(hello.pid), not \(pid)"
            _ = killForMisbehaviour(symptom: .malformedAnswer(reason: failure))
        } catch {
            switch error {
            case .timedOut:
                failure = "no hello within \(seconds) s"
                _ = killForMisbehaviour(symptom: .closedSocket)
            case .closed:
                let death = reapAfterSocketClosed(symptom: .closedSocket)
                failure = "it \(death.ending) before its hello (its stderr, relayed to the log, says why)"
            case .malformed(let problem):
                failure = "malformed hello: \(problem)"
                _ = killForMisbehaviour(symptom: .malformedAnswer(reason: failure))
            case .failed(let systemError):
                failure = systemError.description
                _ = killForMisbehaviour(symptom: .socketFailed(reason: failure))
            }
        }
        throw WorkerSpawnError(reason: "worker \(pid): \(failure)")
    }
}
