import Foundation
package import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// A job queue in a folder, for one machine, no server: producers write a job file under a
/// temporary name and rename it into `incoming/` as `*.json`. A consumer claims a job by renaming
/// it into `claimed/` (rename is atomic: exactly one consumer wins), renders it, and moves it to
/// `done/` or to `failed/` with the reason beside it (`NAME.reason`). Claims of a consumer that
/// died are put back at start (at-least-once), at most `maxTakeOvers` times per job.
package struct SpoolFolder: Sendable {
    package let root: String
    var incoming: String { root + "/incoming" }
    var claimed: String { root + "/claimed" }
    var done: String { root + "/done" }
    var failed: String { root + "/failed" }

    package init(root: String) throws(SystemError) {
        self.root = root
        for folder in [root + "/incoming", root + "/claimed", root + "/done", root + "/failed"] {
            try FileSystem.createFolders(folder)
        }
    }

    /// How often a claimed job is put back after its process died; the next death sends it to
    /// `failed/` (a job that kills its renderer must not crash every consumer that takes it).
    package static let maxTakeOvers = 2
    package static let diedReason = "the renderer died on this job"

    /// What `recoverClaims` did with the claims of processes that are gone.
    package struct Recovery: Sendable, Equatable {
        /// Put back into `incoming/`.
        package var recovered = 0
        /// Sent to `failed/`: their process died more than `maxTakeOvers` times on them.
        package var gaveUp: [String] = []
    }

    /// Claimed files are named `PID.NAME`: a claim whose process is gone goes back to `incoming/`,
    /// counted in `claimed/.NAME.takeovers`; past `maxTakeOvers` it goes to `failed/` instead.
    package func recoverClaims() -> Recovery {
        var recovery = Recovery()
        for name in (try? FileSystem.names(in: claimed)) ?? [] {
            guard let dot = name.firstIndex(of: "."), let pid = Int32(name[..<dot]) else { continue }
            if pid != getpid() && FileSystem.processExists(pid) { continue } // still alive
            let original = String(name[name.index(after: dot)...])
            let counter = takeOverCounter(original)
            let takeOvers = Self.count(in: try? SmallFile.read(counter, maxBytes: 16)) + 1
            if takeOvers > Self.maxTakeOvers {
                let reason = "\(Self.diedReason) (its process died \(takeOvers) times before finishing it)"
                try? AtomicFile.replace(failed + "/" + original + ".reason", with: Array((reason + "\n").utf8))
                if (try? FileSystem.rename(claimed + "/" + name, to: failed + "/" + original)) != nil { recovery.gaveUp.append(original) }
                try? FileSystem.remove(counter)
                continue
            }
            // The count first: a crash between the two steps costs a take-over, never forgets one.
            try? AtomicFile.replace(counter, with: Array("\(takeOvers)\n".utf8))
            if (try? FileSystem.rename(claimed + "/" + name, to: incoming + "/" + original)) != nil { recovery.recovered += 1 }
        }
        return recovery
    }

    /// `recoverClaims`, counting the jobs put back.
    @discardableResult
    package func recoverAbandonedClaims() -> Int { recoverClaims().recovered }

    func takeOverCounter(_ name: String) -> String { claimed + "/." + name + ".takeovers" }

    /// The job file's own name from its claimed path (`claimed/PID.NAME`).
    static func jobName(ofClaimed claimedPath: String) -> String {
        let claimedName = claimedPath.lastIndex(of: "/").map { String(claimedPath[claimedPath.index(after: $0)...]) } ?? claimedPath
        return claimedName.firstIndex(of: ".").map { String(claimedName[claimedName.index(after: $0)...]) } ?? claimedName
    }

    /// A take-over counter's value; a missing or damaged one counts as none.
    static func count(in data: [UInt8]?) -> Int {
        guard let data, data.count <= 16 else { return 0 }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.utf8.count <= 3 ? Int(text) ?? 0 : 0
    }

    /// The outcome of claiming: a job, a malformed file (already moved to `failed/`), or nothing left.
    package enum Claim: Sendable {
        case job(BatchJob)
        case malformed(name: String, reason: String)
        case empty
    }

    /// Claims the oldest job file (by name) that no other consumer took first.
    package func claimNext() -> Claim {
        let names = ((try? FileSystem.names(in: incoming)) ?? [])
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        for name in names {
            let claimedPath = "\(claimed)/\(getpid()).\(name)"
            guard (try? FileSystem.rename(incoming + "/" + name, to: claimedPath)) != nil else { continue } // another consumer won
            // Producers are not trusted: a symlink to a file elsewhere or a sparse giant is
            // refused before a byte of it is parsed (and nothing of another file is echoed back).
            let data: [UInt8]
            do throws(SmallFileError) {
                data = try SmallFile.read(claimedPath, maxBytes: BatchJob.maxJobBytes)
            } catch {
                let reason = switch error {
                case .tooLarge: "the job file is over \(BatchJob.maxJobBytes) bytes"
                case .notRegular(let what): "the job file is \(what), not a regular file"
                case .unreadable(let failure): "cannot read the job file (\(failure))"
                }
                finish(claimedPath: claimedPath, failure: reason)
                return .malformed(name: name, reason: reason)
            }
            do {
                var job = try BatchJob.parse(Data(data))
                job.origin = claimedPath
                return .job(job)
            } catch {
                finish(claimedPath: claimedPath, failure: "malformed job: \(error.reason)")
                return .malformed(name: name, reason: error.reason)
            }
        }
        return .empty
    }

    /// Moves a claimed job to `done/`, or to `failed/` with `failure` written beside it.
    package func finish(claimedPath: String, failure: String?) {
        let name = Self.jobName(ofClaimed: claimedPath)
        defer { try? FileSystem.remove(takeOverCounter(name)) }
        if let failure {
            try? AtomicFile.replace(failed + "/" + name + ".reason", with: Array((failure + "\n").utf8))
            try? FileSystem.rename(claimedPath, to: failed + "/" + name)
        } else {
            try? FileSystem.rename(claimedPath, to: done + "/" + name)
        }
    }
}
