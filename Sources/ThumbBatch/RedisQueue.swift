import Foundation
#if canImport(Glibc)
import Glibc
#endif
package import ThumbPipeline
package import ThumbSystem

/// Redis Streams as a job queue shared by thumbd processes on many machines.
///
/// Producers: `redis-cli XADD STREAM '*' job '{"asset": "a/b.jpg", "kinds": ["large"]}'`
/// (or fields `asset`, `kinds` comma-separated, `scale`). Consumers join the group (default
/// `thumbd`) with `XREADGROUP`; a job is acknowledged only after its outputs are durably written,
/// and its outcome is appended to `STREAM:results` in the same atomic step (a Lua script that
/// checks the job is still ours, `XADD`s the result and `XACK`s), so each job has exactly one
/// result even when a slow consumer's job was claimed by another. Jobs left pending longer than
/// `claimIdle` by a dead consumer are taken over with `XAUTOCLAIM`. A job delivered more than
/// `maxDeliveries` times (it keeps killing its consumers), and a job that cannot succeed (not a
/// decodable image, no such asset, malformed), go to `STREAM:dead` with the reason.
///
/// Two ways to consume: once (`thumbd batch --queue`: until the stream is drained), or
/// following (`--follow`, the daemon's `"queue"`: a blocking read waits for work, until
/// `lifecycle` stops). Either way a lost connection is retried (`RedisReconnect`) and the job
/// that was in hand is acknowledged after the reconnect by the same script, so exactly-once
/// still holds: a drain that a Redis restart ended with 69 left the rest of the stream undone
/// for no reason a retry could not cure.
///
/// One owner thread (the runner's).
package final class RedisQueue {
    package let address: Address
    let credentials: RedisCredentials?
    private var connection: RedisConnection?
    let consumer: String
    let follows: Bool
    let lifecycle: Lifecycle
    let log: PipelineLog?
    package let counters: RedisQueueCounters
    private var reconnect: RedisReconnect
    /// Called on the owner thread before each wait of a reconnect (at most
    /// `RedisReconnect.maxDelaySeconds` apart): the consumer's heartbeat, so that systemd's
    /// watchdog sees a follower waiting out a long outage as alive.
    var waiting: (() -> Void)?
    /// Jobs handed out and not yet finished, by message id.
    private(set) var outstanding: Set<String> = []
    /// After a reconnect: this consumer's own pending jobs are read again first (a reply lost
    /// with the connection may have delivered one that never reached us).
    private var rereadOwnPending = false
    /// Messages one read delivered beyond the job handed out (a read takes as many as the runner
    /// has room for): handed out next, oldest first.
    private var delivered: [RedisValue] = []
    private var deliveredIndex = 0
    /// When the last take-over found nothing: looked for again after `takeOverInterval`, not
    /// on every job (it costs two round trips).
    private var lastTakeOver: ContinuousClock.Instant?
    private var takeOverInterval: Duration { .milliseconds(min(1_000, max(1, address.claimIdleMilliseconds / 2))) }
    /// At most this many messages a read, whatever the room.
    static let maxReadCount = 32
    /// Malformed or over-delivered messages, already dead-lettered: for the summary (the
    /// first `maxRejectedKept`; a follower runs for months).
    package private(set) var rejected: [(id: String, reason: String)] = []
    static let maxRejectedKept = 1_000
    /// How long one blocking read waits: a stop is seen within it.
    static let blockMilliseconds = 1_000

    static let finishScript = """
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
        if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
        redis.call('XADD', KEYS[2], '*', 'id', ARGV[2], 'consumer', ARGV[3], 'status', ARGV[4], 'asset', ARGV[5], 'reason', ARGV[6])
        if ARGV[7] == '1' then
          redis.call('XADD', KEYS[3], '*', 'id', ARGV[2], 'asset', ARGV[5], 'reason', ARGV[6], 'job', ARGV[8])
        end
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
        return 1
        """

    /// Connects (once: a refused first connection throws even when following, so that a wrong
    /// address is an error at start, not a silent retry loop) and joins the group.
    package init(address: Address, credentials: RedisCredentials? = nil, follows: Bool = false,
                 lifecycle: Lifecycle = Lifecycle(), log: PipelineLog? = nil,
                 counters: RedisQueueCounters = RedisQueueCounters()) throws(RedisError) {
        self.address = address
        self.credentials = credentials
        self.follows = follows
        self.lifecycle = lifecycle
        self.log = log
        self.counters = counters
        reconnect = RedisReconnect(counters: counters)
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        consumer = "\(String(cString: host))-\(getpid())"
        let first = try RedisConnection(host: address.host, port: address.port, credentials: credentials)
        try Self.joinGroup(first, address)
        connection = first
    }

    /// A follower's queue: connects, waiting for a Redis that is not up (yet) with the reconnect
    /// backoff, as a lost connection is waited for. Nil when `lifecycle` stops first; throws for
    /// what waiting cannot cure (refused credentials, an error reply).
    package static func following(_ address: Address, credentials: RedisCredentials?, lifecycle: Lifecycle, log: PipelineLog?,
                                  counters: RedisQueueCounters) throws(RedisError) -> RedisQueue? {
        var backoff = RedisReconnect(counters: counters)
        while true {
            do {
                let queue = try RedisQueue(address: address, credentials: credentials, follows: true, lifecycle: lifecycle,
                                           log: log, counters: counters)
                backoff.restored(log: log, address: address)
                return queue
            } catch where error.kind == .connection {
                backoff.lost(error, log: log, address: address, starting: true)
                if lifecycle.waitForStop(timeoutSeconds: backoff.nextDelaySeconds()) { return nil }
            }
        }
    }

    /// On `connection` itself, never through `command`: joining is part of (re)connecting, and a
    /// connection that fails here is one more failed try of the same episode.
    private static func joinGroup(_ connection: RedisConnection, _ address: Address) throws(RedisError) {
        do {
            // From the start of the stream: jobs added before the first consumer count too.
            _ = try connection.command(["XGROUP", "CREATE", address.stream, address.group, "0", "MKSTREAM"])
        } catch where error.message.hasPrefix("BUSYGROUP") {
            // The group exists: another consumer made it.
        }
    }


    /// One command. A consumer whose connection is lost reconnects (backing off, until the
    /// lifecycle stops) and runs it again: every command here may run twice (the finish script
    /// checks the job is still ours, so a finish whose reply was lost adds no second result; a
    /// read again delivers what a lost reply held, see `rereadOwnPending`).
    private func command(_ arguments: [String], operation: String? = nil) throws(RedisError) -> RedisValue {
        var rejoined = false
        while true {
            let live: RedisConnection
            if let connection { live = connection } else { live = try reconnected() }
            do {
                do {
                    return try live.command(arguments, operation: operation)
                } catch where follows && error.message.hasPrefix("NOGROUP") && !rejoined {
                    // The stream or its group was deleted under a follower (DEL, FLUSHALL): made
                    // again (from the start of what the stream now holds), once for this command.
                    log?.warning("queue \(address.description): the group \(address.group) is gone (\(error.message)); joining it again")
                    rejoined = true
                    try Self.joinGroup(live, address)
                }
            } catch where error.kind == .connection {
                connection = nil
                reconnect.lost(error, log: log, address: address)
            }
        }
    }

    /// A new connection that has joined the group, after waiting out the backoff; throws once
    /// the lifecycle stops, or for what waiting cannot cure (refused credentials, an error
    /// reply). Only a connection that got this far ends the episode: a Redis that accepts and
    /// then drops every connection is retried with the growing backoff, not in a loop.
    private func reconnected() throws(RedisError) -> RedisConnection {
        while true {
            waiting?()
            if lifecycle.waitForStop(timeoutSeconds: reconnect.nextDelaySeconds()) {
                throw RedisError(.connection, operation: "reconnect to \(address.description)", message: "stopping")
            }
            do {
                let fresh = try RedisConnection(host: address.host, port: address.port, credentials: credentials)
                try Self.joinGroup(fresh, address) // a Redis restarted without its data has no group
                connection = fresh
                reconnect.restored(log: log, address: address)
                // What was delivered and not handed out is read again from the history.
                rereadOwnPending = true
                delivered = []
                deliveredIndex = 0
                return fresh
            } catch where error.kind == .connection {
                reconnect.failedAgain(error)
            }
        }
    }

    /// The next job for a one-shot consumer (`.end` once the stream is drained: nothing new,
    /// nothing pending but this consumer's own) or a follower (`.end` only once stopping;
    /// `.nothing` after a wait with no job). Blocks only when `mayWait`; a read takes at most
    /// `room` messages (what the runner can start now). Messages delivered and not yet handed
    /// out when a follower stops stay pending on it, taken over by another after claim-idle-ms.
    package func next(mayWait: Bool, room: Int = 1) throws(RedisError) -> BatchRunner.NextJob {
        while true {
            if follows && lifecycle.isStopping { return .end }
            if deliveredIndex < delivered.count {
                let message = delivered[deliveredIndex]
                deliveredIndex += 1
                if let job = try accept(message, deliveries: 1) { return .job(job) }
                continue // a rejected message: on to the next
            }
            if rereadOwnPending, let job = try ownPending() { return .job(job) }
            if lastTakeOver.map({ ContinuousClock.now - $0 >= takeOverInterval }) ?? true {
                if let job = try takeOver() { return .job(job) }
                lastTakeOver = .now
            }
            let block = mayWait ? ["BLOCK", String(follows ? Self.blockMilliseconds : 500)] : []
            let count = String(min(Self.maxReadCount, max(1, room)))
            let reply = try command(["XREADGROUP", "GROUP", address.group, consumer, "COUNT", count] + block
                                    + ["STREAMS", address.stream, ">"])
            let messages = reply.array.first?.array.dropFirst().first?.array ?? []
            if !messages.isEmpty {
                delivered = messages
                deliveredIndex = 0
                continue
            }
            if follows || !mayWait { return .nothing }
            // Drained of new jobs: one last look for jobs to take over, then the pending count.
            if let job = try takeOver() { return .job(job) }
            let pending = try command(["XPENDING", address.stream, address.group])
            let pendingCount = Int(pending.array.first?.string ?? "0") ?? 0
            if pendingCount <= outstanding.count { return .end }
            // Someone else's jobs are pending: the blocking read above was the wait for them to
            // finish or to become claimable.
        }
    }

    /// This consumer's own pending jobs that it does not hold (delivered in a reply lost with
    /// the connection): read again from its history, oldest first. Nil once there are none.
    private func ownPending() throws(RedisError) -> BatchJob? {
        var after = "0"
        while true {
            let reply = try command(["XREADGROUP", "GROUP", address.group, consumer, "COUNT", "10", "STREAMS", address.stream, after])
            let messages = reply.array.first?.array.dropFirst().first?.array ?? []
            guard !messages.isEmpty else {
                rereadOwnPending = false
                return nil
            }
            for message in messages {
                guard let id = message.array.first?.string else { continue }
                after = id
                if outstanding.contains(id) { continue }
                let details = try command(["XPENDING", address.stream, address.group, id, id, "1"])
                let deliveries = Int(details.array.first?.array.dropFirst(3).first?.string ?? "1") ?? 1
                if let job = try accept(message, deliveries: deliveries) { return job }
            }
        }
    }

    /// XAUTOCLAIM of jobs idle longer than `claimIdle`; over-delivered ones are dead-lettered.
    private func takeOver() throws(RedisError) -> BatchJob? {
        let reply = try command(["XAUTOCLAIM", address.stream, address.group, consumer,
                                 String(address.claimIdleMilliseconds), "0-0", "COUNT", "1"])
        guard let message = reply.array.dropFirst().first?.array.first else { return nil }
        guard let id = message.array.first?.string else { return nil }
        // Idle because this consumer holds it (in hand, or read and not yet handed out behind a
        // slow render): claimed back to itself, and not handed out a second time.
        if outstanding.contains(id) || delivered[deliveredIndex...].contains(where: { $0.array.first?.string == id }) { return nil }
        let details = try command(["XPENDING", address.stream, address.group, id, id, "1"])
        let deliveries = Int(details.array.first?.array.dropFirst(3).first?.string ?? "1") ?? 1
        counters.add(\.takenOver)
        return try accept(message, deliveries: deliveries)
    }

    /// A delivered message as a job, or nil when it was dead-lettered (malformed, over-delivered).
    private func accept(_ message: RedisValue, deliveries: Int) throws(RedisError) -> BatchJob? {
        guard let id = message.array.first?.string else { return nil }
        let fields = message.array.dropFirst().first?.array.compactMap(\.string) ?? []
        var values: [String: String] = [:]
        var index = 0
        while index + 1 < fields.count {
            values[fields[index]] = fields[index + 1]
            index += 2
        }
        let text = values["job"] ?? ""
        outstanding.insert(id)
        if deliveries > address.maxDeliveries {
            try finish(id: id, asset: values["asset"] ?? "", failure: "delivered \(deliveries) times without finishing", deadLetter: true, job: text)
            reject(id, "delivered \(deliveries) times")
            return nil
        }
        do throws(BatchJob.FormatError) {
            var job = try BatchJob.parse(redisFields: fields)
            job.origin = id
            return job
        } catch {
            try finish(id: id, asset: values["asset"] ?? "", failure: "malformed job: \(error.reason)", deadLetter: true, job: text)
            reject(id, error.reason)
            return nil
        }
    }

    private func reject(_ id: String, _ reason: String) {
        if rejected.count < Self.maxRejectedKept { rejected.append((id, reason)) }
    }

    /// Gives a job back unacknowledged (a failure a retry may cure): after `claimIdle` it is
    /// taken over again, by this or another consumer, until `maxDeliveries`.
    package func release(id: String) {
        outstanding.remove(id)
    }

    /// Records the outcome and acknowledges, atomically and only if the job is still ours.
    /// `deadLetter`: also append the job to `STREAM:dead`.
    package func finish(id: String, asset: String, failure: String?, deadLetter: Bool, job: String = "") throws(RedisError) {
        let reply = try command(["EVAL", Self.finishScript, "3", address.stream, address.results, address.dead,
                                 address.group, id, consumer, failure == nil ? "rendered" : "failed", asset,
                                 failure ?? "", deadLetter ? "1" : "0", job], operation: "finish job \(id)")
        outstanding.remove(id)
        // 0: another consumer took the job over meanwhile (its result is the one that counts).
        guard reply == .integer(1) else { return }
        if failure == nil { counters.add(\.rendered) } else { counters.add(\.failed) }
        if deadLetter { counters.add(\.deadLettered) }
    }

    /// The group's backlog: `lag` (entries not yet delivered to any consumer; Redis 7's XINFO
    /// GROUPS) and `pending` (delivered, not acknowledged). Recorded in `counters`.
    /// An error reply (a stream deleted meanwhile) leaves the counters as they were: the sample
    /// is for reports, never a reason to stop consuming.
    @discardableResult
    package func sampleBacklog() throws(RedisError) -> (lag: Int?, pending: Int) {
        let groups: RedisValue
        do {
            groups = try command(["XINFO", "GROUPS", address.stream])
        } catch where error.kind == .reply {
            return (nil, counters.snapshot.pending)
        }
        for group in groups.array {
            let fields = group.array
            var values: [String: RedisValue] = [:]
            var index = 0
            while index + 1 < fields.count {
                if let key = fields[index].string { values[key] = fields[index + 1] }
                index += 2
            }
            guard values["name"]?.string == address.group else { continue }
            let pending = Int(values["pending"]?.string ?? "0") ?? 0
            let lag = values["lag"]?.string.flatMap { Int($0) }
            counters.setBacklog(lag: lag, pending: pending)
            return (lag, pending)
        }
        return (nil, 0)
    }
}
