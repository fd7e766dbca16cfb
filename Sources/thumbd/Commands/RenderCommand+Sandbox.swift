#if canImport(Glibc)
import Glibc
#endif
import ThumbImaging
import ThumbPipeline
import ThumbSystem
import ThumbWorker

extension RenderCommand {
    /// `--sandbox`: the jobs of one input rendered by a worker process from one read and one
    /// decode. This process opens the file (the worker can open nothing) and passes it; a worker
    /// that dies or passes `limits.renderSeconds` fails this input only.
    static func render(_ jobs: [Job], requests: [ThumbnailRequest], limits: ImageLimits, tuning: ShrinkPlan.Tuning,
                       in supervisor: RenderWorkerSupervisor, renderSeconds: Double) -> [Result<String, Failure>] {
        let input = jobs[0].input
        func all(_ failure: ThumbFailure, _ message: String) -> [Result<String, Failure>] {
            jobs.map { _ in .failure(Failure(message: message, code: ExitCode(failure))) }
        }
        let descriptor: Int32
        do throws(SystemError) {
            // O_NONBLOCK: a FIFO named as input is refused by fstat below instead of blocking the open.
            descriptor = try systemCall("open") { open(input, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
        } catch {
            let failure: ThumbFailure = error.errno == ENOENT || error.errno == ENOTDIR ? .notFound(path: input)
                : error.errno == EACCES || error.errno == EPERM ? .permissionDenied(path: input, reason: error.description)
                : .unreadable(path: input, reason: error.description)
            return all(failure, "\(input): cannot \(error)")
        }
        defer { close(descriptor) }
        let status: FileStatus
        do throws(SystemError) {
            let (found, mode) = try FileStatus.of(descriptor: descriptor, label: input)
            guard (mode & S_IFMT) == S_IFREG else {
                return all(.forbidden(path: input, reason: "not a regular file"), "\(input): not a regular file")
            }
            status = found
        } catch {
            return all(.unreadable(path: input, reason: error.description), "\(input): cannot \(error)")
        }
        let outcome = supervisor.render(source: descriptor, status: status, label: input, requests: requests, limits: limits,
                                        tuning: tuning, deadlineSeconds: renderSeconds)
        guard case .rendered(let answer) = outcome else {
            let failure = ThumbFailure(outcome, renderSeconds: renderSeconds) ?? .rendererUnavailable(reason: "no answer")
            if case .unavailable(let error) = outcome { return all(failure, "\(input): \(error)") }
            return all(failure, "\(input): \(failure)")
        }
        return zip(jobs, answer.results).map { job, result in
            switch result {
            case .success(let thumbnail): return write(thumbnail, for: job)
            case .failure(let failure):
                // A limit's reason reads whole on its own; the others say what failed.
                let message = if case .read(.tooLarge(let reason)) = failure { reason } else { failure.description }
                return .failure(Failure(message: "\(input): \(message)", code: ExitCode(ThumbFailure(failure, path: input))))
            }
        }
    }
}
