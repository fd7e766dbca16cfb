extension SpoolFolder {
    /// Claims and renders jobs until `incoming/` is empty; each job then moves to `done/` or
    /// `failed/`. Malformed job files are reported (and already in `failed/`).
    /// `keepGoing` is asked before each claim: a stopping daemon finishes the jobs it holds only.
    public func drain(with runner: BatchRunner, keepGoing: @escaping () -> Bool = { true }) -> BatchRunner.Summary {
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
            finish(claimedPath: origin, failure: failures.isEmpty ? nil : failures.map { "\($0.kind): \($0.reason)" }.joined(separator: "; "))
        }
        summary.failures = malformed + summary.failures
        return summary
    }
}
