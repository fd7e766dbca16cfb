import Foundation
import Synchronization
package import ThumbImaging
package import ThumbPipeline

/// Renders batch jobs through a pipeline at batch priority, on all its workers, into the cache
/// or into an output tree `OUT/<kind>@<scale>x/<asset path>.<ext>`.
/// Idempotent: thumbnails that are up to date are skipped.
package final class BatchRunner {
    package struct Failure: Error, Sendable, Equatable {
        package var asset: String
        package var kind: String
        package var reason: String
        /// False for failures a retry may cure (an output write, a pipeline shutting down).
        package var isPermanent: Bool

        package init(asset: String, kind: String, reason: String, isPermanent: Bool = true) {
            self.asset = asset
            self.kind = kind
            self.reason = reason
            self.isPermanent = isPermanent
        }
    }

    /// What a run did. Counts are of thumbnails (asset × kind × scale).
    package struct Summary: Sendable {
        package var rendered = 0
        package var upToDate = 0
        /// The first `maxFailuresKept` failures; a run that follows a queue for months counts
        /// the rest in `failuresNotKept` instead of holding them.
        package var failures: [Failure] = []
        package var failuresNotKept = 0
        package var elapsedSeconds = 0.0
        package var failed: Int { failures.count + failuresNotKept }
        package var total: Int { rendered + upToDate + failed }
        static let maxFailuresKept = 10_000

        mutating func record(_ failure: Failure) {
            if failures.count < Self.maxFailuresKept { failures.append(failure) } else { failuresNotKept += 1 }
        }
        package var imagesPerSecond: Double { elapsedSeconds > 0 ? Double(rendered) / elapsedSeconds : 0 }
    }

    let pipeline: ThumbnailPipeline
    let catalog: SlotCatalog
    let defaultKinds: [String]
    /// The format of jobs that name none (`--format`); nil: each kind's preferred one.
    package var defaultFormat: EncoderSettings.Format?
    let outputTree: String?
    let assetRoot: String
    let maxInFlight: Int
    package var progress: ((Summary, _ expected: Int?) -> Void)?
    /// The output folders this runner has written into, each swept once of the temporary files
    /// of writers that died (a run killed with -9 before this one).
    var staleTemporaries = StaleTemporaryFiles()

    package init(pipeline: ThumbnailPipeline, catalog: SlotCatalog, defaultKinds: [String], outputTree: String?) {
        self.pipeline = pipeline
        self.catalog = catalog
        self.defaultKinds = defaultKinds
        self.outputTree = outputTree
        self.assetRoot = pipeline.configuration.assetRoot
        maxInFlight = max(4, pipeline.configuration.workers * 4)
    }

    /// One thumbnail of a job.
    struct Task {
        var job: Int
        var asset: String
        var kindName: String
        var kind: SlotKind
        var scale: Int
        var format: EncoderSettings.Format
    }

    /// Results handed from pipeline completions (on the pipeline's threads) to this thread.
    final class Inbox: Sendable {
        let results = Mutex<[(Task, PipelineResponse)]>([])
        let arrived = DispatchSemaphore(value: 0)

        func post(_ task: Task, _ response: PipelineResponse) {
            results.withLock { $0.append((task, response)) }
            arrived.signal()
        }

        func take() -> [(Task, PipelineResponse)] {
            results.withLock { results in
                defer { results.removeAll() }
                return results
            }
        }
    }

    /// Runs `jobs` (any sequence, read lazily); `jobDone` is told each job's failures once all
    /// its thumbnails are settled (for the spool's done/failed moves).
    package func run(_ jobs: some Sequence<BatchJob>, expected: Int? = nil,
                    jobDone: ((BatchJob, [Failure]) -> Void)? = nil) -> Summary {
        var iterator = jobs.makeIterator()
        return run(source: { _, _ in iterator.next().map { .job($0) } ?? .end }, expected: expected, jobDone: jobDone)
    }

    /// What a job source has now.
    package enum NextJob {
        case job(BatchJob)
        /// Nothing yet (a queue that is followed): asked again once results are settled.
        case nothing
        /// No more jobs: the run ends when those in flight are settled.
        case end
    }

    /// Runs the jobs `source` hands out. `source(mayWait, room)` may block for a job only when
    /// `mayWait` is true: nothing is in flight then, so no finished job waits for its
    /// acknowledgement while the source waits for work. `room`: how many more renders the
    /// runner would start now (at least 1), for a source that takes jobs in batches.
    package func run(source: (_ mayWait: Bool, _ room: Int) -> NextJob, expected: Int? = nil,
                     jobDone: ((BatchJob, [Failure]) -> Void)? = nil) -> Summary {
        let start = ContinuousClock.now
        var summary = Summary()
        let inbox = Inbox()
        var inFlight = 0
        var pendingPerJob: [Int: (job: BatchJob, remaining: Int, failures: [Failure])] = [:]
        var lastProgress = ContinuousClock.now

        func settle(_ task: Task, failure: Failure?) {
            if let failure { summary.record(failure) }
            guard var entry = pendingPerJob[task.job] else { return }
            entry.remaining -= 1
            if let failure { entry.failures.append(failure) }
            if entry.remaining == 0 {
                pendingPerJob[task.job] = nil
                jobDone?(entry.job, entry.failures)
            } else {
                pendingPerJob[task.job] = entry
            }
        }

        func drain(waiting: Bool) {
            // Each result signals once; signals may outnumber what is left (a drain takes every
            // result posted so far), so an empty take just waits again.
            var batch = inbox.take()
            while batch.isEmpty && waiting {
                inbox.arrived.wait()
                batch = inbox.take()
            }
            for (task, response) in batch {
                if case .failure(.overloaded) = response.result {
                    // A full queue is back-pressure, not a failure of the asset: ask again once a
                    // render thread has taken a job (or after a second, whatever happened).
                    _ = pipeline.waitForQueueRoom(priority: .batch, timeoutSeconds: 1)
                    submit(task, inbox: inbox)
                    continue
                }
                inFlight -= 1
                switch response.result {
                case .success(let thumbnail):
                    if let failure = writeOutput(task, thumbnail) { settle(task, failure: failure) } else {
                        summary.rendered += 1
                        settle(task, failure: nil)
                    }
                case .failure(let error):
                    settle(task, failure: Failure(asset: task.asset, kind: "\(task.kindName)@\(task.scale)x",
                                                  reason: error.description, isPermanent: error.disposition.isPermanent))
                }
            }
            if ContinuousClock.now - lastProgress > .milliseconds(200) {
                lastProgress = ContinuousClock.now
                summary.elapsedSeconds = (ContinuousClock.now - start) / .seconds(1)
                progress?(summary, expected)
            }
        }

        var index = -1
        jobs: while true {
            let job: BatchJob
            switch source(inFlight == 0, max(1, maxInFlight - inFlight)) {
            case .end: break jobs
            case .nothing:
                if inFlight > 0 { drain(waiting: true) }
                continue jobs
            case .job(let next): job = next
            }
            index += 1
            let tasks: [Task]
            switch expand(job, index: index) {
            case .success(let expanded): tasks = expanded
            case .failure(let failure):
                summary.record(failure)
                jobDone?(job, [failure])
                continue
            }
            pendingPerJob[index] = (job, tasks.count, [])
            if tasks.isEmpty {
                // Every job handed out is finished, even one with nothing to render.
                pendingPerJob[index] = nil
                let failure = Failure(asset: job.asset, kind: "-", reason: "no kinds to render")
                summary.record(failure)
                jobDone?(job, [failure])
                continue
            }
            for task in tasks {
                if isUpToDate(task) {
                    summary.upToDate += 1
                    settle(task, failure: nil)
                    continue
                }
                while inFlight >= maxInFlight { drain(waiting: true) }
                inFlight += 1
                submit(task, inbox: inbox)
                drain(waiting: false)
            }
        }
        while inFlight > 0 { drain(waiting: true) }
        summary.elapsedSeconds = (ContinuousClock.now - start) / .seconds(1)
        progress?(summary, expected)
        return summary
    }

    private func submit(_ task: Task, inbox: Inbox) {
        pipeline.submit(PipelineRequest(assetPath: task.asset, kind: task.kind, scale: task.scale, priority: .batch,
                                        format: task.format)) { response in
            inbox.post(task, response)
        }
    }

    func expand(_ job: BatchJob, index: Int) -> Result<[Task], Failure> {
        var tasks: [Task] = []
        for name in job.kinds ?? defaultKinds {
            let selection: SlotSelection
            do {
                // The job's scale is checked like any other selection (limits.maxOutputPixels).
                selection = try catalog.resolve(name, scale: job.scale.flatMap { DisplayScale($0) })
            } catch {
                return .failure(Failure(asset: job.asset, kind: DisplayText.truncated(name, maxBytes: 60), reason: error.description))
            }
            for scale in selection.scales {
                tasks.append(Task(job: index, asset: job.asset, kindName: selection.kind.name, kind: selection.kind, scale: scale,
                                  format: job.format ?? defaultFormat ?? pipeline.configuration.preferredFormat(for: selection.kind)))
            }
        }
        return .success(tasks)
    }
}
