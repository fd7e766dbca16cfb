import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// thumbd under a real systemd: the Debian 12 systemd (252) boots as PID 1 in namespaces of its
/// own (SystemdGuest), the units are installed by the very commands of systemd/README.md's
/// "Install" section, and the service is driven the way an operator and its clients would:
/// socket activation, READY and STATUS, reload, hostile requests, stop, the journal, and a
/// watchdog restart of a stopped (SIGSTOP) daemon. ServeSystemdTests checks the same protocol
/// with the test playing the service manager; this one checks the units and systemd's verdicts.
@Suite("thumbd under a real systemd")
struct RealSystemdTests {
    /// The asset folder the README's commands create and point the config at.
    static let assets = "/srv/thumbd/assets"

    @Test("installed as systemd/README.md says, it serves, reloads, survives hostile requests, stops cleanly, logs no warning and is restarted by the watchdog",
          // Root-only: it mounts, pivots and boots an init. Skipped (reason printed) elsewhere.
          .enabled(if: SystemdGuest.unavailableReason == nil,
                   "needs root and /lib/systemd/systemd: boots systemd as PID 1 in new namespaces"))
    func readmeInstallUnderRealSystemd() throws {
        let started = Date()
        let binary = ServePaths.packageRoot + "/.build/release/thumbd"
        try #require(FileManager.default.isExecutableFile(atPath: binary),
                     "the README installs \(binary): run `swift build -c release` first")
        let install = try Self.readmeInstallCommands()
        let photo = try Self.corpusAsset(format: "JPEG", widerThan: 256), image = try Self.corpusAsset(format: "PNG", widerThan: 40)

        let guest = try SystemdGuest(bindingReadOnly: [ServePaths.packageRoot, ServePaths.corpus])
        defer { guest.tearDown() }
        let booted = Date()

        // 1. The README's commands, as written, from the package root.
        let installed = try guest.shell("cd \(Self.quoted(ServePaths.packageRoot))\n" + install, timeout: 60)
        try #require(installed.status == 0, "systemd/README.md's install commands failed:\n\(installed.summary)")
        #expect(try guest.property("ActiveState", of: "thumbd.socket") == "active")
        #expect(try guest.run(["systemctl", "is-enabled", "thumbd.socket"]).text == "enabled")
        try #require(try guest.property("ActiveState") == "inactive",
                     "thumbd.service runs before any client connected: socket activation is not what started it")
        let copied = try guest.shell("install -m 0644 \(Self.quoted(photo)) \(Self.assets)/photo.jpg\n"
                                     + "install -m 0644 \(Self.quoted(image)) \(Self.assets)/image.png")
        try #require(copied.status == 0, "\(copied.summary)")

        // 2. Socket activation: the first request, from a member of group thumbd, starts the service.
        let first = try guest.curl("/v1/thumbnails/large/photo.jpg", as: "nobody:thumbd", timeout: 60)
        #expect(first.status == 200, "first request over thumbd.socket: \(first.summary)")
        let size = ServeImageHeader.size(first.body)
        #expect(size.map { max($0.width, $0.height) <= 256 } == true, "not a 'large' thumbnail: \(first.summary)")
        let outsider = try guest.curl("/healthz", as: "nobody:nogroup")
        #expect(outsider.status == nil && outsider.curlExit != 0,
                "a client outside group thumbd reached the 0660 socket: \(outsider.summary)")

        // 3. READY (Type=notify: "active" only after READY=1) and STATUS.
        let mainPID = try guest.property("MainPID")
        #expect(try guest.property("ActiveState") == "active" && guest.property("SubState") == "running")
        #expect(mainPID != "0" && !mainPID.isEmpty, "no main process: \(mainPID)")
        let status = try guest.property("StatusText")
        #expect(status.hasPrefix("serving"), "StatusText=\(status)")
        let startLog = try guest.journal(since: started)
        #expect(startLog.contains("fd:3"), "the daemon did not serve the socket systemd passed (fd 3):\n\(startLog)")

        // 3b. The journal, natively: each render is an entry journalctl finds by its fields (the
        // request's kind, and the kinds the watcher pre-renders).
        let rendered = try guest.journalEntries(matching: ["THUMBD_ASSET=photo.jpg", "THUMBD_KIND=large@1x"])
        #expect(rendered.count == 1, "journalctl -u thumbd THUMBD_ASSET=photo.jpg THUMBD_KIND=large@1x: \(rendered)")
        if let entry = rendered.first {
            #expect(entry["THUMBD_EVENT"] == "rendered" && entry["PRIORITY"] == "6" && entry["SYSLOG_IDENTIFIER"] == "thumbd"
                    && entry["MESSAGE"]?.hasPrefix("rendered photo.jpg as large@1x: ") == true, "\(entry)")
        }
        let photoEntries = try guest.journalEntries(matching: ["THUMBD_ASSET=photo.jpg"])
        #expect(!photoEntries.isEmpty && photoEntries.allSatisfy { $0["THUMBD_ASSET"] == "photo.jpg" }, "\(photoEntries)")
        let imageKinds = try guest.journalEntries(matching: ["THUMBD_ASSET=image.png"]).compactMap { $0["THUMBD_KIND"] }
        #expect(!imageKinds.contains("large@1x"), "image.png was never asked for as large: \(imageKinds)")

        // 4. Reload: SIGHUP re-reads the config; same process, still active, the new kind served.
        try checkReload(guest, mainPID: mainPID)

        // 5. Hostile requests: answered, and no restart.
        try checkHostileRequests(guest, mainPID: mainPID)

        // 6. Stop: SIGTERM, exit status 0, result success.
        let stopped = try guest.run(["systemctl", "stop", "thumbd.service"], timeout: 60)
        #expect(stopped.status == 0, "systemctl stop: \(stopped.summary)")
        #expect(try guest.property("ActiveState") == "inactive")
        #expect(try guest.property("Result") == "success")
        #expect(try guest.property("ExecMainCode") == "1", "main process did not exit by itself (CLD_EXITED)")
        #expect(try guest.property("ExecMainStatus") == "0")
        #expect(try guest.property("NRestarts") == "0")

        // 7. The journal of all the above: no warning, and no runtime noise at notice either.
        let warnings = try guest.journal(since: started, priority: "warning")
        let everything = try guest.journal(since: started)
        #expect(warnings.isEmpty, "warnings in the journal of a normal run:\n\(warnings)\n--- whole journal:\n\(everything)")
        #expect(!everything.contains("Failed to set thread priority"), "libdispatch's renice notice:\n\(everything)")
        #expect(!everything.contains("Backtracing"), "the daemon crashed during a normal run:\n\(everything)")

        // 8. The watchdog restarts a daemon that stopped answering, with a backtrace in the journal.
        let restartSeconds = try checkWatchdog(guest)
        print("RealSystemdTests: \(String(format: "%.1f", Date().timeIntervalSince(started))) s in all "
              + "(boot \(String(format: "%.1f", booted.timeIntervalSince(started))) s, "
              + "watchdog restart \(String(format: "%.1f", restartSeconds)) s)")
    }

    func checkReload(_ guest: SystemdGuest, mainPID: String) throws {
        #expect(try !guest.curl("/v1/kinds").text.contains("reload-probe"))
        let edited = try guest.shell(#"""
            sed -i 's|"kinds": {|"kinds": {\n    "reload-probe": { "width": 40, "height": 40, "mode": "fit" },|' /etc/thumbd/thumbd.json
            grep -q reload-probe /etc/thumbd/thumbd.json
            """#)
        try #require(edited.status == 0, "editing /etc/thumbd/thumbd.json: \(edited.summary)")
        let reloaded = try guest.run(["systemctl", "reload", "thumbd.service"], timeout: 60)
        #expect(reloaded.status == 0, "systemctl reload: \(reloaded.summary)")
        #expect(try guest.property("ActiveState") == "active")
        #expect(try guest.property("MainPID") == mainPID, "reload replaced the process")
        #expect(try guest.curl("/v1/kinds").text.contains("reload-probe"), "the reloaded config's kind is not listed")
        let probe = try guest.curl("/v1/thumbnails/reload-probe/image.png", timeout: 60)
        #expect(probe.status == 200 && ServeImageHeader.size(probe.body).map { max($0.width, $0.height) <= 40 } == true,
                "the reloaded kind does not render: \(probe.summary)")
    }

    struct Hostile {
        var what: String
        var path: String
        var method = "GET"
        var body: String? = nil
        /// A 4xx answer is required; otherwise any HTTP answer will do.
        var refused = true
    }

    /// Crashers and escapes of issue 8 among them: none may cost the daemon its process.
    static let hostile: [Hostile] = [
        Hostile(what: "`..` segments", path: "/v1/thumbnails/large/../../../../etc/passwd"),
        Hostile(what: "percent-encoded `..`", path: "/v1/thumbnails/large/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd"),
        Hostile(what: "an absolute asset path", path: "/v1/thumbnails/large//etc/passwd"),
        Hostile(what: "a NUL in the asset path", path: "/v1/thumbnails/large/photo.jpg%00.png"),
        Hostile(what: "a zero-sized inline spec", path: "/v1/thumbnails/0x0/photo.jpg"),
        Hostile(what: "a malformed inline spec", path: "/v1/thumbnails/12x,,fill@@9x/photo.jpg"),
        Hostile(what: "an inline spec of 1e19 points", path: "/v1/thumbnails/1e19x1/photo.jpg"),
        Hostile(what: "an unknown kind", path: "/v1/thumbnails/no-such-kind/photo.jpg"),
        Hostile(what: "scale 1e17", path: "/v1/thumbnails/large/photo.jpg?scale=1e17"),
        Hostile(what: "a negative wait", path: "/v1/thumbnails/large/photo.jpg?wait=-1"),
        Hostile(what: "a token at UInt64.max", path: "/v1/thumbnails/large/photo.jpg?client=hostile&slot=s1&token=18446744073709551615",
                refused: false),
        Hostile(what: "the same slot without a token", path: "/v1/thumbnails/large/photo.jpg?client=hostile&slot=s1",
                refused: false),
        Hostile(what: "a prefetch at scale 1e17", path: "/v1/prefetch", method: "POST",
                body: #"{"assets": ["photo.jpg"], "kinds": ["large"], "scale": 1e17}"#),
        Hostile(what: "a prefetch body that is not JSON", path: "/v1/prefetch", method: "POST", body: #"{"assets": ["#),
        Hostile(what: "DELETE /v1/prefetch/ without an id", path: "/v1/prefetch/", method: "DELETE"),
        Hostile(what: "an unknown method", path: "/healthz", method: "BREW", refused: false),
    ]

    func checkHostileRequests(_ guest: SystemdGuest, mainPID: String) throws {
        for request in Self.hostile {
            let answer = try guest.curl(request.path, method: request.method, body: request.body)
            if request.refused {
                #expect(answer.status.map { (400..<500).contains($0) } == true, "\(request.what): \(answer.summary)")
            } else {
                #expect(answer.status != nil, "\(request.what): \(answer.summary)")
            }
        }
        // Renders a request queued (the prefetch) run after its answer: give them time to fail.
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, try guest.property("NRestarts") == "0" { usleep(250_000) }
        let restarts = try guest.property("NRestarts"), pid = try guest.property("MainPID")
        let recent = try guest.journal(since: Date().addingTimeInterval(-60))
        #expect(restarts == "0" && pid == mainPID,
                "hostile requests restarted the daemon (NRestarts=\(restarts), MainPID \(mainPID) → \(pid)):\n\(recent)")
        #expect(try guest.property("ActiveState") == "active")
        #expect(try guest.curl("/healthz").status == 200)
    }

    /// SIGSTOP the daemon under a 4 s watchdog (a drop-in); systemd must abort it, have its
    /// backtrace in the journal, and start a new one. Returns the seconds from SIGSTOP to active.
    func checkWatchdog(_ guest: SystemdGuest) throws -> Double {
        let dropIn = try guest.shell("""
            install -d /etc/systemd/system/thumbd.service.d
            printf '[Service]\\nWatchdogSec=4s\\n' > /etc/systemd/system/thumbd.service.d/watchdog-test.conf
            systemctl daemon-reload
            systemctl start thumbd.service
            """, timeout: 60)
        try #require(dropIn.status == 0, "watchdog drop-in: \(dropIn.summary)")
        try #require(try guest.property("WatchdogUSec") == "4s" && guest.property("ActiveState") == "active")
        let stoppedPID = try guest.property("MainPID")
        // Counted from here: a 4 s watchdog could (on a loaded machine) have fired already.
        let restartsBefore = try Int(guest.property("NRestarts")) ?? -1
        let abortSeconds = try Self.seconds(guest.property("TimeoutAbortUSec"))
        let stopSeconds = try Self.seconds(guest.property("TimeoutStopUSec"))
        let since = Date()
        let sent = try guest.run(["kill", "-STOP", stoppedPID])
        try #require(sent.status == 0, "kill -STOP \(stoppedPID): \(sent.summary)")
        do {
            try servePoll(timeout: 4 + abortSeconds + stopSeconds + 20, "the watchdog to restart thumbd") {
                usleep(200_000)
                let pid = try guest.property("MainPID")
                return try guest.property("NRestarts") == String(restartsBefore + 1) && guest.property("ActiveState") == "active"
                    && pid != stoppedPID && pid != "0"
            }
        } catch {
            Issue.record("\(error)\n\(try guest.journal(since: since))")
            return Date().timeIntervalSince(since)
        }
        let restartSeconds = Date().timeIntervalSince(since)
        let journal = try guest.journal(since: since)
        #expect(journal.contains("Watchdog timeout"), "\(journal)")
        // The Swift runtime's backtracer works under the unit's hardening (MemoryDenyWriteExecute=).
        #expect(journal.contains("crashed:") && journal.contains("Backtrace took") && !journal.contains("failed ***"),
                "no backtrace of the aborted daemon in the journal:\n\(journal)")
        // The runtime survives a SIGABRT sent by kill() once it has written the backtrace; the
        // SIGKILL after TimeoutAbortSec= must come well before the stop timeout would.
        #expect(restartSeconds < 4 + stopSeconds, "watchdog restart took \(restartSeconds) s:\n\(journal)")
        #expect(try guest.curl("/healthz", timeout: 30).status == 200)
        return restartSeconds
    }
}

extension RealSystemdTests {
    /// The first ```sh block under "## Install" in systemd/README.md, verbatim: that is what runs.
    static func readmeInstallCommands() throws -> String {
        try readmeCommands(section: "## Install", mustContain: "systemctl enable --now thumbd.socket")
    }

    /// The first ```sh block under `section` in systemd/README.md, verbatim; it must still run
    /// `mustContain` (what the test relies on).
    static func readmeCommands(section: String, mustContain: String) throws -> String {
        let readme = ServePaths.packageRoot + "/systemd/README.md"
        let lines = try String(contentsOfFile: readme, encoding: .utf8).components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: section), let open = lines[start...].firstIndex(of: "```sh"),
              let close = lines[(open + 1)...].firstIndex(of: "```") else {
            throw TestFailure("\(readme): no ```sh block under '\(section)'")
        }
        let block = lines[(open + 1)..<close].joined(separator: "\n")
        guard block.contains(mustContain) else {
            throw TestFailure("\(readme): the block under '\(section)' no longer runs '\(mustContain)'; this test relies on it:\n\(block)")
        }
        return block
    }

    /// A small valid image of the corpus (manifest.tsv: expect "valid") with a side above `pixels`.
    static func corpusAsset(format: String, widerThan pixels: Int) throws -> String {
        for row in try CorpusManifest.jpegAndPNG() {
            guard row.format == format, row.expect == "valid", let bytes = row.bytes, (20_000...300_000).contains(bytes) else { continue }
            // "100x100 SOF3" gives one number: skipped, as its size is not the plain "WxH".
            let sides = row.dims.split(separator: "x").compactMap { Int($0) }
            guard sides.count == 2, let longer = sides.max(), longer > pixels else { continue }
            if FileManager.default.fileExists(atPath: row.path) { return row.path }
        }
        throw TestFailure("no valid \(format) of 20-300 KB above \(pixels) px in \(ServePaths.corpus)/manifest.tsv")
    }

    /// For a bash command line.
    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }

    /// systemd's time spans as `systemctl show` prints them: "10s", "1min 30s", "500ms".
    static func seconds(_ span: String) throws -> Double {
        let units: [(String, Double)] = [("ms", 0.001), ("min", 60), ("us", 0.000_001), ("h", 3600), ("s", 1)]
        var total = 0.0
        for part in span.split(separator: " ") {
            guard let (suffix, factor) = units.first(where: { part.hasSuffix($0.0) }),
                  let value = Double(part.dropLast(suffix.count)) else {
                throw TestFailure("unexpected time span '\(span)'")
            }
            total += value * factor
        }
        return total
    }
}
