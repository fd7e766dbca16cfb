import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbWorker
#if canImport(Glibc)
import Glibc
#endif

/// What an idle worker is, seen from outside through /proc: seccomp filter in force, no new
/// privileges, its limits, its own process group, and nothing open but 0–3.
@Suite(.serialized) struct WorkerSandboxTests {
    @Test func idleWorkerIsSandboxed() throws {
        let worker = try RenderWorker.spawn(try WorkerFixture.launch())
        defer { worker.shutdown() }
        let status = try String(contentsOfFile: "/proc/\(worker.pid)/status", encoding: .utf8)
        let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }, uniquingKeysWith: { first, _ in first })
        #expect(fields["Seccomp"] == "2", "seccomp filter mode")
        #expect(fields["NoNewPrivs"] == "1")

        let limits = try String(contentsOfFile: "/proc/\(worker.pid)/limits", encoding: .utf8).split(separator: "\n")
        func limit(_ name: String) -> [String] {
            guard let line = limits.first(where: { $0.hasPrefix(name) }) else { return [] }
            return line.dropFirst(name.count).split(separator: " ").map(String.init)
        }
        #expect(limit("Max address space").prefix(2) == ["\(WorkerFixture.memoryLimitBytes)", "\(WorkerFixture.memoryLimitBytes)"])
        #expect(limit("Max open files").prefix(2) == ["16", "16"])
        #expect(limit("Max core file size").prefix(2) == ["0", "0"])

        // /proc/PID/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so count after ')'.
        let stat = try String(contentsOfFile: "/proc/\(worker.pid)/stat", encoding: .utf8)
        let afterName = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        #expect(afterName[2] == "\(worker.pid)", "its own process group")

        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(worker.pid)/fd").compactMap(Int.init).sorted()
        #expect(descriptors == [0, 1, 2, 3])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(worker.pid)/fd/0") == "/dev/null")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(worker.pid)/fd/3").hasPrefix("socket:"))
        let environment = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(worker.pid)/environ")).split(separator: 0)
            .map { String(decoding: $0, as: UTF8.self) }
        // The launch's environment and nothing else. Debian 12's glibc parses GLIBC_TUNABLES in
        // place, ending each tunable at its ':' with a NUL, so /proc may show the heap tunables
        // one per string.
        let launched = ["SWIFT_BACKTRACE=enable=no", "THUMBD_WORKER_MEMORY_BYTES=\(WorkerFixture.memoryLimitBytes)"]
        let parsedInPlace = launched + WorkerLaunch.heapTunables.split(separator: ":").map(String.init)
        #expect(environment == launched + [WorkerLaunch.heapTunables] || environment == parsedInPlace, "\(environment)")
    }

    @Test func listsNameWhatTheFilterAllowsAndRefuses() {
        let allowed = WorkerSandbox.allowedCalls, refused = WorkerSandbox.refusedCalls
        #expect(allowed.contains("read") && allowed.contains("brk") && !allowed.contains("openat") && !allowed.contains("execve"))
        #expect(Set(["open", "openat", "openat2", "socket", "connect"]).isSubset(of: Set(refused)))
        #expect(Set(allowed).isDisjoint(with: Set(refused)))
    }

    @Test func spawnOfAMissingExecutableFailsClearly() throws {
        var launch = try WorkerFixture.launch()
        launch.executablePath = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-worker-\(UUID())").path
        #expect(throws: WorkerSpawnError.self) { try RenderWorker.spawn(launch) }
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: launch, counters: counters)
        let outcome = try WorkerFixture.render(supervisor, WorkerFixture.corpusFile("libjpeg-turbo-testimages/testorig.jpg"))
        guard case .unavailable(let error) = outcome else { throw TestFailure("expected unavailable, got \(outcome)") }
        #expect(error.reason.contains("No such file"), "\(error)")
        #expect(counters.snapshot().count(.spawnFailed) == 1)
    }

    /// A program that is not a worker (it never says hello) is refused within the hello timeout.
    @Test func executableThatNeverSaysHelloIsRefused() throws {
        let launch = WorkerLaunch(executablePath: "/bin/sleep", arguments: ["30"], memoryLimitBytes: 0, helloTimeoutSeconds: 0.5)
        let start = ContinuousClock.now
        #expect(throws: WorkerSpawnError.self) { try RenderWorker.spawn(launch) }
        #expect(RenderWorker.seconds(since: start) < 5)
    }
}
