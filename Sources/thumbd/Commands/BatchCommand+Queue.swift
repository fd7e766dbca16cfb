import Foundation
import Synchronization
import ThumbBatch
import ThumbConfiguration
import ThumbPipeline
import ThumbServer
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch --queue URL [--follow]`: a Redis Streams consumer, once or as a service.
extension BatchCommand {
    enum Consumed {
        case ran(QueueConsumer.Outcome, rejected: [BatchRunner.Failure])
        case failed(ExitCode)
        /// SIGTERM while the follower still waited for Redis: nothing was taken.
        case stoppedWaiting
    }

    static func blockStopSignals() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        return signals
    }

    func consume(_ address: RedisQueue.Address, runner: BatchRunner, log: PipelineLog, signals: sigset_t?) -> Consumed {
        let credentials: RedisCredentials?
        do throws(RedisError) {
            let (found, source) = try address.credentials()
            credentials = found
            if source == .url {
                log.warning("queue \(address.description): the Redis password is in the URL, which every local user can read "
                            + "in ps; give it in a file instead (password-file=PATH, or LoadCredential=redis-password under systemd)")
            }
        } catch {
            Console.error("thumbd batch: queue \(address.description): \(error)")
            return .failed(.config)
        }
        let lifecycle = Lifecycle()
        let counters = RedisQueueCounters()
        var endpoint: StreamMetricsEndpoint?
        if let metricsAddress {
            do throws(SystemError) {
                endpoint = try StreamMetricsEndpoint(metricsAddress, counters: counters)
            } catch {
                Console.error("thumbd batch: cannot serve metrics on \(metricsAddress.host):\(metricsAddress.port): \(error)")
                return .failed(.osError)
            }
        }
        defer { endpoint?.stop() }
        // A follower is a service from here on: signals, READY, the watchdog; then it waits for
        // Redis if need be (a Redis down when the host boots is not a failure of the consumer).
        let running = RunningConsumer()
        if follows {
            do throws(SystemError) {
                try startService(address, running: running, counters: counters, lifecycle: lifecycle, signals: signals)
            } catch {
                Console.error("thumbd batch: cannot start the signal thread: \(error)")
                return .failed(.software)
            }
        }
        defer { lifecycle.stop() } // ends the watchdog thread
        let queue: RedisQueue
        do throws(RedisError) {
            if follows {
                guard let connected = try RedisQueue.following(address, credentials: credentials, lifecycle: lifecycle, log: log,
                                                               counters: counters) else {
                    return .stoppedWaiting
                }
                queue = connected
            } else {
                queue = try RedisQueue(address: address, credentials: credentials, log: log, counters: counters)
            }
        } catch {
            Console.error("thumbd batch: queue \(address.description): \(JSONLines.textLine(error.description))")
            return .failed(error.kind == .authentication ? .config : .unavailable)
        }
        let consumer = QueueConsumer(queue: queue, runner: runner, log: log)
        if follows {
            let notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
            let name = address.description
            consumer.sampled = { snapshot in notifier.notify("STATUS=queue \(name): \(snapshot.statusLine)") }
            running.consumer.withLock { $0 = consumer }
        }
        let outcome = consumer.run()
        let rejected = queue.rejected.map { BatchRunner.Failure(asset: $0.id, kind: "-", reason: $0.reason) }
        return .ran(outcome, rejected: rejected)
    }

    /// A follower as a service: SIGTERM or SIGINT stops it (the jobs in hand finish); under
    /// systemd READY=1 now (the config and the cache are good; Redis may still be on its way,
    /// and STATUS says so), STATUS after each backlog sample, and WATCHDOG=1 while the
    /// consumer's loop is alive (it beats at least once a blocking read, 1 s, or a render's
    /// deadline) or while it is still waiting for Redis.
    private func startService(_ address: RedisQueue.Address, running: RunningConsumer, counters: RedisQueueCounters,
                              lifecycle: Lifecycle, signals: sigset_t?) throws(SystemError) {
        if let signals {
            try LongLivedThread.detach(name: "thumbd-signals") {
                var set = signals
                while true {
                    let signal = sigwaitinfo(&set, nil)
                    if signal == SIGTERM || signal == SIGINT {
                        lifecycle.stop()
                        return
                    }
                }
            }
        }
        let notifier = SystemdNotifier(environment: ProcessInfo.processInfo.environment)
        notifier.notify("READY=1\nSTATUS=queue \(address.description): connecting")
        guard let interval = SystemdNotifier.watchdogInterval() else { return }
        try LongLivedThread.detach(name: "thumbd-watchdog") {
            while !lifecycle.waitForStop(timeoutSeconds: max(0.05, interval / 2)) {
                let heartbeat = running.consumer.withLock { $0?.lastHeartbeat }
                if heartbeat.map({ ContinuousClock.now - $0 < .seconds(interval) }) ?? true { notifier.notify("WATCHDOG=1") }
            }
        }
    }
}

/// The consumer once connected, for the watchdog thread (nil while it waits for Redis).
final class RunningConsumer: Sendable {
    let consumer = Mutex<QueueConsumer?>(nil)
}
