import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
import ThumbSystem
@testable import ThumbPipeline

/// The house's one stop signal (`Lifecycle`), and the parts that observe it instead of flags
/// of their own.
@Suite("lifecycle")
struct LifecycleTests {
    @Test("a stop happens once: wakers run once, in order; one registered late runs at once")
    func stopsOnce() {
        let lifecycle = Lifecycle()
        let calls = Mutex<[String]>([])
        lifecycle.onStop { calls.withLock { $0.append("first") } }
        let withdrawn = lifecycle.onStop { calls.withLock { $0.append("withdrawn") } }
        lifecycle.onStop { calls.withLock { $0.append("second") } }
        lifecycle.withdraw(withdrawn)
        #expect(!lifecycle.isStopping)
        #expect(lifecycle.stop())
        #expect(lifecycle.isStopping)
        #expect(!lifecycle.stop())
        lifecycle.onStop { calls.withLock { $0.append("late") } }
        #expect(calls.withLock { $0 } == ["first", "second", "late"])
    }

    @Test("a child stops with its parent; a child's stop leaves the parent and its siblings running")
    func childrenFollowTheirParent() {
        let parent = Lifecycle()
        let first = parent.child(), second = parent.child()
        let grandchild = first.child()
        #expect(first.stop())
        #expect(first.isStopping && grandchild.isStopping)
        #expect(!parent.isStopping && !second.isStopping)
        parent.stop()
        #expect(second.isStopping)
        // A child made of a stopped parent is born stopped.
        #expect(parent.child().isStopping)
    }

    @Test("waitForStop ends at the stop, from another thread, long before its timeout")
    func waitEndsAtTheStop() throws {
        let lifecycle = Lifecycle()
        #expect(!lifecycle.waitForStop(timeoutSeconds: 0.01))
        let stopper = try LongLivedThread.start(name: "test-stopper") {
            _ = Lifecycle().waitForStop(timeoutSeconds: 0.05)
            lifecycle.stop()
        }
        // Generous: the stop comes after 50 ms; a wait that missed it would take 600 s.
        #expect(lifecycle.waitForStop(timeoutSeconds: 600))
        stopper.join()
    }

    @Test("the owner's stop ends a folder watcher's thread: no event is handled after it")
    func ownerStopsTheWatcher() throws {
        let fixture = try PipelineFixture()
        let owner = Lifecycle()
        let events = Mutex<[FolderWatcher.Event]>([])
        let watcher = try FolderWatcher(root: try AssetRoot(path: fixture.assets), log: .discard, rootPollSeconds: 600,
                                        lifecycle: owner) { event in events.withLock { $0.append(event) } }
        try watcher.start()
        owner.stop()
        #expect(watcher.isStopping)
        let seen = events.withLock { $0.count }
        try Data([1]).write(to: URL(fileURLWithPath: fixture.assets + "/new.jpg"))
        // The thread was woken out of its 600 s poll by the stop: the join returns.
        watcher.stop()
        #expect(events.withLock { $0.count } == seen)
    }

    @Test("the owner's stop reaches the pipeline: a held reconcile is let go without reconciling; requests are still answered")
    func ownerStopsThePipeline() async throws {
        let fixture = try PipelineFixture()
        let owner = Lifecycle()
        let gate = ReconcileGate()
        let pipeline = try ThumbnailPipeline(configuration: fixture.configuration { $0.reconcileGate = gate }, startsWorkers: true,
                                             lifecycle: owner)
        defer { pipeline.shutdown() }
        #expect(!pipeline.lifecycle.isStopping)
        owner.stop()
        #expect(pipeline.lifecycle.isStopping)
        // The gate was held: only the stop lets the reconcile thread past it, and it then stops.
        pipeline.waitForBackgroundReconcile()
        #expect(!pipeline.startupProgress.cacheReconciled)
        // Requests are still answered (the shutdown decides when they stop), through the lock.
        let response = await pipeline.thumbnail(PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(response.thumbnail != nil)
    }
}
