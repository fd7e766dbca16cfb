import Foundation
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

extension SpoolFolder {
    /// Claims and renders jobs until `incoming/` is empty; each job then moves to `done/` or
    /// `failed/`. Malformed job files are reported (and already in `failed/`).
    /// `keepGoing` is asked before each claim: a stopping daemon finishes the jobs it holds only.
    package func drain(with runner: BatchRunner, keepGoing: @escaping () -> Bool = { true }) -> BatchRunner.Summary {
        var malformed: [BatchRunner.Failure] = []
        let jobs = AnySequence { () -> AnyIterator<BatchJob> in
            AnyIterator {
                while keepGoing() {
                    switch claimNext() {
                    case .job(let job): return job
                    case .malformed(let name, let reason):
                        malformed.append(BatchRunner.Failure(asset: name, kind: "-", reason: "malformed job: \(reason)"))
                    case .empty: return nil
                    }
                }
                return nil
            }
        }
        var summary = runner.run(jobs) { job, failures in
            guard let origin = job.origin else { return }
            let reason = failures.isEmpty ? nil : failures.map { "\($0.kind): \($0.reason)" }.joined(separator: "; ")
            // The failure table decides: one failure a retry may cure sends the job round again.
            if let reason, failures.contains(where: { !$0.isPermanent }) {
                retryLater(claimedPath: origin, failure: reason)
            } else {
                finish(claimedPath: origin, failure: reason)
            }
        }
        summary.failures = malformed + summary.failures
        return summary
    }
}

extension SpoolFolder {
    /// Puts a claimed job back into `incoming/`, counted like a take-over, so that a failure that
    /// is never cured (an unreadable disk) ends in `failed/` after `maxTakeOvers` tries instead of
    /// going round for ever.
    func retryLater(claimedPath: String, failure: String) {
        let name = Self.jobName(ofClaimed: claimedPath)
        let counter = takeOverCounter(name)
        let attempts = Self.count(in: try? SmallFile.read(counter, maxBytes: 16)) + 1
        guard attempts <= Self.maxTakeOvers else {
            return finish(claimedPath: claimedPath, failure: "\(failure) (tried \(attempts) times)")
        }
        try? AtomicFile.replace(counter, with: Array("\(attempts)\n".utf8))
        try? FileSystem.rename(claimedPath, to: incoming + "/" + name)
    }
}
