import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
package final class RedisQueue {
    package struct Address: Sendable, Equatable {
        package var host: String
        package var port: Int
        package var stream: String
        package var group = "thumbd"
        /// Milliseconds a job may stay pending on another consumer before it is taken over.
        package var claimIdleMilliseconds = 60_000
        package var maxDeliveries = 3

        /// `redis://HOST:PORT/STREAM[?group=G&claim-idle-ms=N&max-deliveries=N]`
        package init?(_ url: String) {
            guard let components = URLComponents(string: url), components.scheme == "redis",
                  let host = components.host, !host.isEmpty else { return nil }
            let stream = String(components.path.dropFirst())
            guard !stream.isEmpty, !stream.contains("/") else { return nil }
            self.host = host
            port = components.port ?? 6379
            self.stream = stream
            for item in components.queryItems ?? [] {
                switch item.name {
                case "group": if let value = item.value, !value.isEmpty { group = value } else { return nil }
                case "claim-idle-ms": guard let value = item.value.flatMap(Int.init), value > 0 else { return nil }; claimIdleMilliseconds = value
                case "max-deliveries": guard let value = item.value.flatMap(Int.init), value > 0 else { return nil }; maxDeliveries = value
                default: return nil
                }
            }
        }

        package var results: String { stream + ":results" }
        package var dead: String { stream + ":dead" }
    }

    package let address: Address
    let connection: RedisConnection
    let consumer: String
    /// Jobs handed out and not yet finished, by message id.
    private(set) var outstanding: Set<String> = []
    /// Malformed or over-delivered messages, already dead-lettered: for the summary.
    package private(set) var rejected: [(id: String, reason: String)] = []

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

    package init(address: Address) throws(RedisError) {
        self.address = address
        connection = try RedisConnection(host: address.host, port: address.port)
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        consumer = "\(String(cString: host))-\(getpid())"
        do {
            // From the start of the stream: jobs added before the first consumer count too.
            _ = try connection.command(["XGROUP", "CREATE", address.stream, address.group, "0", "MKSTREAM"])
        } catch where error.message.hasPrefix("BUSYGROUP") {
            // The group exists: another consumer made it.
        }
    }

    /// The next job: taken over from a dead consumer, or new. Nil once the stream is drained
    /// (nothing new, and nothing pending but this consumer's own outstanding jobs).
    package func next() throws(RedisError) -> BatchJob? {
        while true {
            if let job = try takeOver() { return job }
            let reply = try connection.command(["XREADGROUP", "GROUP", address.group, consumer, "COUNT", "1", "BLOCK", "500",
                                                "STREAMS", address.stream, ">"])
            if let message = reply.array.first?.array.dropFirst().first?.array.first, let job = try accept(message, deliveries: 1) {
                return job
            }
            if reply != .null && !reply.array.isEmpty { continue } // a rejected message: read on
            let pending = try connection.command(["XPENDING", address.stream, address.group])
            let count = Int(pending.array.first?.string ?? "0") ?? 0
            if count <= outstanding.count { return nil }
            // Someone else's jobs are pending: wait for them to finish or to become claimable.
            usleep(200_000)
        }
    }

    /// XAUTOCLAIM of jobs idle longer than `claimIdle`; over-delivered ones are dead-lettered.
    private func takeOver() throws(RedisError) -> BatchJob? {
        let reply = try connection.command(["XAUTOCLAIM", address.stream, address.group, consumer,
                                            String(address.claimIdleMilliseconds), "0-0", "COUNT", "1"])
        guard let message = reply.array.dropFirst().first?.array.first else { return nil }
        guard let id = message.array.first?.string else { return nil }
        let details = try connection.command(["XPENDING", address.stream, address.group, id, id, "1"])
        let deliveries = Int(details.array.first?.array.dropFirst(3).first?.string ?? "1") ?? 1
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
            rejected.append((id, "delivered \(deliveries) times"))
            return nil
        }
        do throws(BatchJob.FormatError) {
            var job = try BatchJob.parse(redisFields: fields)
            job.origin = id
            return job
        } catch {
            try finish(id: id, asset: values["asset"] ?? "", failure: "malformed job: \(error.reason)", deadLetter: true, job: text)
            rejected.append((id, error.reason))
            return nil
        }
    }

    /// Gives a job back unacknowledged (a failure a retry may cure): after `claimIdle` it is
    /// taken over again, by this or another consumer, until `maxDeliveries`.
    package func release(id: String) {
        outstanding.remove(id)
    }

    /// Records the outcome and acknowledges, atomically and only if the job is still ours.
    /// `deadLetter`: also append the job to `STREAM:dead`.
    package func finish(id: String, asset: String, failure: String?, deadLetter: Bool, job: String = "") throws(RedisError) {
        outstanding.remove(id)
        _ = try connection.command(["EVAL", Self.finishScript, "3", address.stream, address.results, address.dead,
                                    address.group, id, consumer, failure == nil ? "rendered" : "failed", asset,
                                    failure ?? "", deadLetter ? "1" : "0", job])
    }
}
