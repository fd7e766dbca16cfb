import Foundation
import ThumbBatch
import ThumbConfiguration
import ThumbImaging

/// The parsers of names, specs, configs and jobs.
enum TextDoors {
    /// `{kind}` of `GET /v1/thumbnails/{kind}/…`, `--slot`, a prefetch or job kind.
    static func slotSpec(_ text: String) {
        guard let selection = try? FuzzCatalog.catalog.resolve(text) else { return }
        FuzzCatalog.exercise(selection.kind, scales: selection.scales)
    }

    /// A config file: what `thumbd slots`, `serve` and a SIGHUP reload parse, then use of every kind.
    static func kindConfig(_ bytes: [UInt8]) {
        guard let config = try? ThumbConfig.parse(Data(bytes), file: "fuzz.json", relativeTo: "fuzz") else { return }
        for kind in config.catalog.kinds.values {
            FuzzCatalog.exercise(kind, scales: kind.scales)
        }
    }

    /// A jobs-file line or spool file, then its kinds as the batch runner expands them.
    static func jobLine(_ bytes: [UInt8]) {
        guard let job = try? BatchJob.parse(Data(bytes)) else { return }
        expand(job)
        // What a spool or dead-letter record writes must read back as the same job.
        precondition((try? BatchJob.parse(job.json)) == job, "job does not survive its own JSON: \(job)")
    }

    /// A Redis message's fields (name and value on alternate lines), as the consumer takes them.
    static func redisFields(_ text: String) {
        let fields = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let job = try? BatchJob.parse(redisFields: fields) else { return }
        expand(job)
    }

    /// `BatchRunner.expand`: every kind resolved, at the job's scale or the kind's.
    static func expand(_ job: BatchJob) {
        for name in job.kinds ?? ["large"] {
            guard let selection = try? FuzzCatalog.catalog.resolve(name) else { continue }
            FuzzCatalog.exercise(selection.kind, scales: job.scale.map { [$0] } ?? selection.scales)
        }
    }
}
