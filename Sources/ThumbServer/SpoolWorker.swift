import Foundation
import Synchronization
import ThumbBatch
import ThumbImaging
import ThumbPipeline

/// The daemon's spool consumer: a thread that drains the spool folder through the daemon's own
/// pipeline (batch priority, so visible requests go first), then sleeps until a job lands in
/// `incoming/` (`SpoolDoorbell`), looking again every `rescanMilliseconds` regardless.
final class SpoolWorker: Sendable {
    let root: String
    let pipeline: ThumbnailPipeline
    let catalog: SlotCatalog
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Set once the thread has it: `stop` rings it so that an idle consumer ends at once.
    private let doorbell = Mutex<SpoolDoorbell?>(nil)
    /// How often an idle consumer lists `incoming/` without being rung: a safety net for an
    /// event lost to an overflowed inotify queue; without a doorbell (no inotify) it is 1 s.
    static let rescanMilliseconds: Int32 = 30_000

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
            // Armed before the first drain, so a job that lands during it rings the first wait.
            let bell: SpoolDoorbell?
            do { bell = try SpoolDoorbell(folder: folder) } catch {
                Log.warning("spool \(root): cannot watch incoming/ (\(error)); looking every second instead")
                bell = nil
            }
            doorbell.withLock { $0 = bell }
            while !stopping.load(ordering: .relaxed) {
                let summary = folder.drain(with: runner) { [self] in !stopping.load(ordering: .relaxed) }
                if summary.total > 0 {
                    Log.info("spool: rendered \(summary.rendered), up to date \(summary.upToDate), failed \(summary.failures.count)")
                }
                if let bell { bell.wait(timeoutMilliseconds: Self.rescanMilliseconds) } else { Thread.sleep(forTimeInterval: 1) }
            }
        }
        thread.name = "thumbd-spool"
        thread.start()
    }

    /// Stops after the job being drained (its thumbnails answered, possibly 503 at shutdown).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        doorbell.withLock { $0?.ring() }
        finished.wait()
    }
}
