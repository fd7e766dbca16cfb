import Foundation
import Synchronization
import ThumbBatch
import ThumbImaging
import ThumbPipeline

/// The daemon's spool consumer: a thread that drains the spool folder through the daemon's own
/// pipeline (batch priority, so visible requests go first), then looks again every second.
final class SpoolWorker: Sendable {
    let root: String
    let pipeline: ThumbnailPipeline
    let catalog: SlotCatalog
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(root: String, pipeline: ThumbnailPipeline, catalog: SlotCatalog) {
        self.root = root
        self.pipeline = pipeline
        self.catalog = catalog
    }

    func start() {
        let thread = Thread { [self] in
            defer { finished.signal() }
            let folder: SpoolFolder
            do { folder = try SpoolFolder(root: root) } catch {
                Log.error("spool \(root) unusable: \(error)")
                return
            }
            let recovery = folder.recoverClaims()
            if recovery.recovered > 0 { Log.notice("spool: took up \(recovery.recovered) job(s) claimed by a process that died") }
            for name in recovery.gaveUp {
                Log.warning("spool: \(DisplayText.truncated(name)) moved to failed/: the renderer died on it \(SpoolFolder.maxTakeOvers + 1) times")
            }
            let pregenerated = catalog.kinds.values.filter(\.pregenerate).map(\.name).sorted()
            let runner = BatchRunner(pipeline: pipeline, catalog: catalog,
                                     defaultKinds: pregenerated.isEmpty ? catalog.kinds.keys.sorted() : pregenerated, outputTree: nil)
            while !stopping.load(ordering: .relaxed) {
                let summary = folder.drain(with: runner) { [self] in !stopping.load(ordering: .relaxed) }
                if summary.total > 0 {
                    Log.info("spool: rendered \(summary.rendered), up to date \(summary.upToDate), failed \(summary.failures.count)")
                }
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.name = "thumbd-spool"
        thread.start()
    }

    /// Stops after the job being drained (its thumbnails answered, possibly 503 at shutdown).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
