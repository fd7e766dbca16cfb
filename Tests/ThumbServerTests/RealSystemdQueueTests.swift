import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// thumbd-queue@.service under a real systemd (issue 27), installed by the commands of
/// systemd/README.md's "Queue consumers" section, against a Redis with `requirepass` whose password
/// reaches the consumer only through `LoadCredential=`: it starts (READY), reports STATUS with the
/// group's lag, renders what the stream asks, is restarted after a kill -9, and stops with 0.
@Suite("thumbd-queue@.service under a real systemd")
struct RealSystemdQueueTests {
    static let unit = "thumbd-queue@catalog.service"
    static let password = "guest redis p4ss"

    @Test("installed as systemd/README.md says, with LoadCredential=, it consumes, reports its lag, restarts after a kill and stops with 0",
          .enabled(if: SystemdGuest.unavailableReason == nil,
                   "needs root and /lib/systemd/systemd: boots systemd as PID 1 in new namespaces"))
    func queueUnitUnderRealSystemd() throws {
        let started = Date()
        let binary = ServePaths.packageRoot + "/.build/release/thumbd"
        try #require(FileManager.default.isExecutableFile(atPath: binary), "run `swift build -c release` first")
        let redisServer = try #require(["/usr/bin/redis-server", "/usr/sbin/redis-server"].first(where: FileManager.default.isExecutableFile),
                                       "redis-server is missing (apt-get install redis-server)")
        let install = try RealSystemdTests.readmeCommands(section: "## Queue consumers", mustContain: "enable --now thumbd-queue@catalog.service")
        let photo = try RealSystemdTests.corpusAsset(format: "JPEG", widerThan: 256)

        let guest = try SystemdGuest(bindingReadOnly: [ServePaths.packageRoot, ServePaths.corpus])
        defer { guest.tearDown() }
        let password = RealSystemdTests.quoted(Self.password)
        func cli(_ command: String) throws -> SystemdGuest.Output {
            try guest.shell("redis-cli --no-auth-warning -a \(password) \(command)")
        }

        // Redis in the guest, with a password; the user and the binary as the Install section makes them.
        let redis = try guest.shell("""
            \(redisServer) --port 6379 --bind 127.0.0.1 --requirepass \(password) --save '' --appendonly no --dir /tmp --daemonize yes
            for _ in $(seq 100); do redis-cli --no-auth-warning -a \(password) PING 2>/dev/null | grep -q PONG && exit 0; sleep 0.1; done
            exit 1
            """)
        try #require(redis.status == 0, "redis-server in the guest: \(redis.summary)")
        let base = try guest.shell("""
            cd \(RealSystemdTests.quoted(ServePaths.packageRoot))
            install -m 0755 .build/release/thumbd /usr/local/bin/thumbd
            install -D -m 0644 systemd/thumbd.sysusers /etc/sysusers.d/thumbd.conf
            systemd-sysusers
            """, timeout: 60)
        try #require(base.status == 0, "\(base.summary)")
        let asset = try guest.shell("install -D -m 0644 \(RealSystemdTests.quoted(photo)) /srv/thumbd/assets/photo.jpg")
        try #require(asset.status == 0, "\(asset.summary)")
        let jobs = try cli("XADD thumbs '*' job '{\"asset\": \"photo.jpg\", \"kinds\": [\"large\"]}'")
        try #require(jobs.status == 0, "\(jobs.summary)")

        // The README's commands, verbatim, with the password in the environment.
        let installed = try guest.shell("cd \(RealSystemdTests.quoted(ServePaths.packageRoot))\nexport REDIS_PASSWORD=\(password)\n"
                                        + install, timeout: 60)
        if installed.status != 0 {
            let status = try guest.run(["systemctl", "status", "--no-pager", Self.unit]).text
            Issue.record("the README's queue commands failed:\n\(installed.summary)\n\(status)\n\(try guest.journal(since: started, unit: Self.unit))")
            return
        }
        let startLog = try guest.journal(since: started, unit: Self.unit)
        #expect(try guest.property("ActiveState", of: Self.unit) == "active", "\(startLog)")

        // The job added before the start, and one added now, each get one result.
        try #require(try cli("XADD thumbs '*' job '{\"asset\": \"photo.jpg\", \"kinds\": [\"normal\"]}'").status == 0)
        try servePoll(timeout: 60, "two results") {
            (try cli("XLEN thumbs:results")).text == "2"
        }
        let results = try cli("XRANGE thumbs:results - +").text
        #expect(results.components(separatedBy: "rendered").count - 1 == 2, "\(results)")
        // STATUS= every 5 s: the counts and the group's lag.
        try servePoll(timeout: 20, "a STATUS with the lag") {
            let status = try guest.property("StatusText", of: Self.unit)
            return status.contains("2 rendered") && status.contains("lag 0")
        }

        // kill -9: Restart=on-failure starts it again, and it consumes again.
        let killedPID = try guest.property("MainPID", of: Self.unit)
        try #require(try guest.run(["kill", "-KILL", killedPID]).status == 0)
        try servePoll(timeout: 30, "a restart after kill -9") {
            usleep(200_000)
            let pid = try guest.property("MainPID", of: Self.unit)
            return try guest.property("NRestarts", of: Self.unit) == "1" && guest.property("ActiveState", of: Self.unit) == "active"
                && pid != killedPID && pid != "0"
        }
        try #require(try cli("XADD thumbs '*' job '{\"asset\": \"photo.jpg\", \"kinds\": [\"x-large\"]}'").status == 0)
        try servePoll(timeout: 60, "the third result after the restart") { (try cli("XLEN thumbs:results")).text == "3" }

        // Stop: SIGTERM, exit status 0, result success.
        let stopped = try guest.run(["systemctl", "stop", Self.unit], timeout: 60)
        #expect(stopped.status == 0, "\(stopped.summary)")
        #expect(try guest.property("Result", of: Self.unit) == "success")
        #expect(try guest.property("ExecMainCode", of: Self.unit) == "1" && guest.property("ExecMainStatus", of: Self.unit) == "0")
        let journal = try guest.journal(since: started, unit: Self.unit)
        #expect(!journal.contains(Self.password), "the password reached the journal:\n\(journal)")
        #expect(!journal.contains("password is in the URL"), "\(journal)")
    }
}
