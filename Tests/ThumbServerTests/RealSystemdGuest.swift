import Foundation
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// systemd as PID 1 of its own PID, mount, network, UTS, IPC and cgroup namespaces, over an
/// overlay of / whose upper layer is a tmpfs (Tests/systemd/boot-guest.sh says why each step is as
/// it is). Everything the guest writes vanishes with it; `tearDown` kills every process it had.
final class SystemdGuest {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        var summary: String { "exit \(status)\nstdout: \(String(decoding: stdout.prefix(4000), as: UTF8.self))\nstderr: \(stderr.prefix(4000))" }
    }

    static let script = ServePaths.packageRoot + "/Tests/systemd/boot-guest.sh"
    static let systemd = "/lib/systemd/systemd"

    /// Why no guest can be booted here (printed once), or nil. Only these two are reasons to skip:
    /// anything else missing on a root machine with systemd is a failure, reported as such.
    static let unavailableReason: String? = {
        var reason: String?
        if geteuid() != 0 {
            reason = "not running as root (booting systemd as PID 1 in new namespaces needs it)"
        } else if !FileManager.default.isExecutableFile(atPath: systemd) {
            reason = "\(systemd) is missing (Debian's systemd package: scripts/install-deps --test)"
        }
        if let reason { print("RealSystemdTests skipped: \(reason)") }
        return reason
    }()

    let scratch: String
    private let boot: ChildProcess
    private var tornDown = false

    /// Boots the guest with `directories` bound read-only at their own paths, and waits until
    /// systemd reports the boot finished.
    init(bindingReadOnly directories: [String]) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-guest-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        // setpriv --pdeathsig: should this test process die, the boot process (unshare, which
        // takes the guest's PID 1 with it) dies too.
        boot = try ChildProcess("/usr/bin/setpriv", ["--pdeathsig", "KILL", "--", "/bin/bash", Self.script, "boot", scratch] + directories,
                                environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"],
                                stdout: .file(scratch + "/console.log"), stderr: .file(scratch + "/console.log"))
        do {
            try servePoll(timeout: 20, "the guest's PID file") {
                if let ending = boot.ending { throw TestFailure("the guest did not boot (\(ending)):\n\(console)") }
                return FileManager.default.fileExists(atPath: scratch + "/pid")
            }
            // The PID file comes just before the exec of systemd; until its manager socket is up,
            // systemctl answers "offline" or cannot connect at all.
            var state = Output(status: -1, stdout: Data(), stderr: "")
            try servePoll(timeout: 60, "the guest's systemd to finish booting") {
                if let ending = boot.ending { throw TestFailure("the guest's PID 1 ended (\(ending)):\n\(console)") }
                state = try run(["systemctl", "is-system-running", "--wait"], timeout: 60)
                let booting = state.text == "offline" || state.text.isEmpty
                if booting { usleep(100_000) }
                return !booting
            }
            // "degraded": some unit of the image failed; thumbd's units are still checked one by one.
            guard ["running", "degraded"].contains(state.text) else {
                throw TestFailure("the guest's systemd did not finish booting: \(state.summary)\n\(console)")
            }
            if state.text == "degraded" {
                print("RealSystemdTests: guest booted degraded: \(try run(["systemctl", "--failed", "--no-legend"]).text)")
            }
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    var console: String { (try? String(contentsOfFile: scratch + "/console.log", encoding: .utf8)) ?? "" }

    /// Runs `arguments` inside the guest as root (cwd /, a clean environment), bounded by
    /// `timeout` there and, as a backstop, here.
    func run(_ arguments: [String], timeout: Double = 30) throws -> Output {
        try Self.execute(["/bin/bash", Self.script, "run", scratch, String(Int(timeout.rounded(.up)))] + arguments,
                         timeout: timeout + 10)
    }

    /// A bash script inside the guest, with -e and pipefail.
    func shell(_ script: String, timeout: Double = 30) throws -> Output {
        try run(["bash", "-euo", "pipefail", "-c", script], timeout: timeout)
    }

    /// `systemctl show -p NAME --value UNIT`.
    func property(_ name: String, of unit: String = "thumbd.service") throws -> String {
        let result = try run(["systemctl", "show", "-p", name, "--value", unit])
        guard result.status == 0 else { throw TestFailure("systemctl show -p \(name) \(unit): \(result.summary)") }
        return result.text
    }

    /// The journal of thumbd's units since `since` (text only), after journald wrote everything.
    func journal(since: Date, priority: String? = nil, unit: String? = nil) throws -> String {
        _ = try run(["journalctl", "--sync"])
        let units = unit.map { ["-u", $0] } ?? ["-u", "thumbd.service", "-u", "thumbd.socket"]
        var arguments = ["journalctl", "--no-pager", "-o", "cat"] + units + ["--since", "@\(Int(since.timeIntervalSince1970))"]
        if let priority { arguments += ["-p", priority] }
        let result = try run(arguments)
        guard result.status == 0 else { throw TestFailure("journalctl: \(result.summary)") }
        return result.text
    }

    /// The journal entries of thumbd.service matching every `FIELD=value` of `matches`
    /// (journalctl's own filtering), each entry's fields as strings.
    func journalEntries(matching matches: [String]) throws -> [[String: String]] {
        _ = try run(["journalctl", "--sync"])
        let result = try run(["journalctl", "--no-pager", "-o", "json", "-u", "thumbd.service"] + matches)
        guard result.status == 0 else { throw TestFailure("journalctl: \(result.summary)") }
        return result.text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.map { object in object.compactMapValues { $0 as? String } }
    }

    /// Kills every process of the guest and removes its cgroup; safe to call more than once.
    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        let result = try? Self.execute(["/bin/bash", Self.script, "teardown", scratch], timeout: 30)
        if result?.status != 0 { print("RealSystemdTests: teardown: \(result?.summary ?? "did not run")") }
        if boot.wait(timeout: 10) == nil {
            boot.signal(SIGKILL)
            _ = boot.wait(timeout: 10)
        }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// Runs a host command to completion (killed after `timeout`).
    static func execute(_ argv: [String], timeout: Double) throws -> Output {
        let child = try ChildProcess.run(argv[0], Array(argv.dropFirst()), environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], timeout: timeout)
        guard !child.timedOut else { throw TestFailure("timed out after \(timeout) s: \(argv.joined(separator: " "))") }
        return Output(status: child.status, stdout: child.stdoutData, stderr: child.stderr)
    }
}

/// HTTP to the daemon from inside the guest: curl over the socket unit's path.
extension SystemdGuest {
    struct Answer {
        /// nil when curl got no HTTP answer (refused, reset, timed out).
        var status: Int?
        var body: [UInt8]
        var curlExit: Int32
        var text: String { String(decoding: body, as: UTF8.self) }
        var summary: String {
            let shown = ServeImageHeader.size(body).map { "a \($0.width)x\($0.height) \($0.format) (\(body.count) bytes)" }
                ?? String(text.prefix(300))
            return "\(status.map(String.init) ?? "no answer") (curl exit \(curlExit)): \(shown)"
        }
    }

    static let socket = "/run/thumbd/thumbd.sock"

    /// `as`: a `setpriv` identity ("nobody:thumbd") to connect as, instead of root.
    func curl(_ path: String, method: String = "GET", body: String? = nil, as identity: String? = nil,
              timeout: Double = 30) throws -> Answer {
        var argv: [String] = []
        if let identity {
            let parts = identity.split(separator: ":").map(String.init)
            argv += ["setpriv", "--reuid=\(parts[0])", "--regid=\(parts[1])", "--clear-groups", "--"]
        }
        argv += ["curl", "--silent", "--show-error", "--path-as-is", "--unix-socket", Self.socket,
                 "--max-time", String(Int(timeout)), "--output", "-", "--write-out", "%{stderr}HTTP-STATUS %{http_code}\n"]
        if method != "GET" { argv += ["--request", method] }
        if let body { argv += ["--header", "Content-Type: application/json", "--data-binary", body] }
        argv.append("http://localhost" + path)
        let result = try run(argv, timeout: timeout + 5)
        let statusLine = result.stderr.split(separator: "\n").last { $0.hasPrefix("HTTP-STATUS ") }
        let code = statusLine.flatMap { Int($0.dropFirst("HTTP-STATUS ".count)) }
        return Answer(status: code == 0 ? nil : code, body: Array(result.stdout), curlExit: result.status)
    }
}
