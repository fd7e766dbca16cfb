import Foundation
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
        let queue: RedisQueue
        do throws(RedisError) {
            queue = try RedisQueue(address: address, credentials: credentials, follows: follows, lifecycle: lifecycle, log: log)
        } catch {
            Console.error("thumbd batch: queue \(address.description): \(error)")
            return .failed(error.kind == .authentication ? .config : .unavailable)
        }
        let consumer = QueueConsumer(queue: queue, runner: runner, log: log)
        var endpoint: StreamMetricsEndpoint?
        if let metricsAddress {
            do throws(SystemError) {
                endpoint = try StreamMetricsEndpoint(metricsAddress, counters: queue.counters)
            } catch {
                Console.error("thumbd batch: cannot serve metrics on \(metricsAddress.host):\(metricsAddress.port): \(error)")
                return .failed(.osError)
            }
        }
        defer { endpoint?.stop() }
        if follows {
            do throws(SystemError) {
                try startService(consumer, lifecycle: lifecycle, signals: signals)
            } catch {
                Console.error("thumbd batch: cannot start the signal thread: \(error)")
                return .failed(.software)
            }
        }
        let outcome = consumer.run()
        lifecycle.stop() // ends the watchdog thread
        let rejected = queue.rejected.map { BatchRunner.Failure(asset: $0.id, kind: "-", reason: $0.reason) }
        return .ran(outcome, rejected: rejected)
    }

    /// A follower as a service: SIGTERM or SIGINT stops it (the jobs in hand finish), and under
    /// systemd READY=1 now, STATUS after each backlog sample, and WATCHDOG=1 while the consumer's
    /// loop is alive (it beats at least once a blocking read, 1 s, or a render's deadline).
    private func startService(_ consumer: QueueConsumer, lifecycle: Lifecycle, signals: sigset_t?) throws(SystemError) {
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
        let address = consumer.queue.address.description
        consumer.sampled = { snapshot in notifier.notify("STATUS=queue \(address): \(snapshot.statusLine)") }
        notifier.notify("READY=1\nSTATUS=queue \(address): consuming")
        guard let interval = SystemdNotifier.watchdogInterval() else { return }
        try LongLivedThread.detach(name: "thumbd-watchdog") {
            while !lifecycle.waitForStop(timeoutSeconds: max(0.05, interval / 2)) {
                if ContinuousClock.now - consumer.lastHeartbeat < .seconds(interval) { notifier.notify("WATCHDOG=1") }
            }
        }
    }
}
