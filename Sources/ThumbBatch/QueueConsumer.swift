import Foundation
import Synchronization
package import ThumbPipeline
package import ThumbSystem
package import ThumbConfiguration

/// A Redis Streams consumer, the same for `thumbd batch --queue` (once, or `--follow`) and the
/// daemon's `"queue"` (a thread that follows the stream): jobs from `RedisQueue`, rendered by
/// the runner at batch priority, each acknowledged with its one result once its thumbnails are
/// settled (a failure a retry may cure is left pending, to be taken over later).
///
/// `@unchecked Sendable`: the queue and the runner (not Sendable) are used by one thread only,
/// the follower's, or the caller of `run` when nothing follows.
package final class QueueConsumer: @unchecked Sendable {
    package let queue: RedisQueue
    let runner: BatchRunner
    let log: PipelineLog
    /// When the consumer last did something (asked for a job, settled one): the watchdog's proof
    /// that the loop is not wedged.
    private let heartbeat = Mutex(ContinuousClock.now)
    /// Called after each backlog sample (every `sampleSeconds` while following): STATUS lines.
    package var sampled: (@Sendable (RedisQueueCounters.Snapshot) -> Void)?
    static let sampleSeconds = 5.0

    package init(queue: RedisQueue, runner: BatchRunner, log: PipelineLog) {
        self.queue = queue
        self.runner = runner
        self.log = log
        queue.waiting = { [weak self] in self?.beat() }
    }

    /// What a run did, and why it ended early: nil when the stream was drained (once) or the
    /// lifecycle stopped (following), else Redis's error (a reply error, refused credentials):
    /// a lost connection is waited out, not an end.
    package struct Outcome {
        package var summary: BatchRunner.Summary
        package var error: RedisError?
    }

    package var lastHeartbeat: ContinuousClock.Instant { heartbeat.withLock { $0 } }

    private func beat() { heartbeat.withLock { $0 = .now } }

    package func run() -> Outcome {
        var queueError: RedisError?
        var lastSample: ContinuousClock.Instant?
        let summary = runner.run(source: { [self] mayWait, room in
            beat()
            guard queueError == nil else { return .end }
            do throws(RedisError) {
                if queue.follows, lastSample.map({ ContinuousClock.now - $0 > .seconds(Self.sampleSeconds) }) ?? true {
                    lastSample = .now
                    try queue.sampleBacklog()
                    sampled?(queue.counters.snapshot)
                }
                return try queue.next(mayWait: mayWait, room: room)
            } catch {
                queueError = error
                return .end
            }
        }) { [self] job, failures in
            beat()
            guard let id = job.origin else { return }
            // A failure a retry may cure stays unacknowledged: it is taken over again later.
            guard failures.allSatisfy(\.isPermanent) else { return queue.release(id: id) }
            let reason = failures.isEmpty ? nil : failures.map { "\($0.kind): \($0.reason)" }.joined(separator: "; ")
            do throws(RedisError) {
                try queue.finish(id: id, asset: job.asset, failure: reason, deadLetter: reason != nil,
                                 job: String(decoding: job.json, as: UTF8.self))
            } catch {
                // Left pending (never half-acknowledged): taken over after claim-idle-ms.
                if queueError == nil { queueError = error }
            }
        }
        // A follower stopped while reconnecting ends without an error: its jobs stay pending.
        if queue.follows, queue.lifecycle.isStopping, queueError?.kind == .connection { queueError = nil }
        return Outcome(summary: summary, error: queueError)
    }

    /// The daemon's `"queue"`: on a thread of its own, connects (a Redis not up yet is waited
    /// for, with the reconnect backoff: the daemon serves meanwhile), then follows the stream
    /// until `lifecycle` stops. Refused credentials or a reply error end the thread, logged, with
    /// `thumbd_stream_connected` 0 from then on (ThumbdStreamDisconnected fires).
    /// The thread is returned for joining after the stop.
    package static func follow(_ address: RedisQueueAddress, runner: BatchRunner, log: PipelineLog, lifecycle: Lifecycle,
                               counters: RedisQueueCounters) throws(SystemError) -> LongLivedThread {
        // Handed over: only the new thread uses the runner from here on.
        nonisolated(unsafe) let runner = runner
        return try LongLivedThread.start(name: "thumbd-queue") {
            let queue: RedisQueue?
            do throws(RedisError) {
                let (credentials, source) = try address.credentials()
                if source == .url {
                    log.warning("queue \(address.description): the Redis password is in the config's URL; "
                                + "give it in a file instead (password-file=PATH, or LoadCredential=redis-password)")
                }
                queue = try RedisQueue.following(address, credentials: credentials, lifecycle: lifecycle, log: log, counters: counters)
            } catch {
                log.warning("queue \(address.description): not consumed: \(error)")
                counters.setConnected(false) // thumbd_stream_connected 0: the alert's cue
                return
            }
            guard let queue else { return } // stopped while waiting for Redis
            let outcome = QueueConsumer(queue: queue, runner: runner, log: log).run()
            if let error = outcome.error {
                log.warning("queue \(address.description): stopped consuming: \(error)")
                counters.setConnected(false)
            }
        }
    }
}
