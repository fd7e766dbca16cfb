import Testing
import ThumbImaging
@testable import ThumbPipeline

/// The job table on its own (no pipeline, no threads): coalescing, detach, priorities and the
/// stale queue entries they leave, parking, groups of siblings for one decode, the queue bound.
@Suite struct JobTableTests {
    static let large = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)
    static let small = SlotKind(name: "small", widthPoints: 40, heightPoints: 24)

    static func version(_ path: String, size: Int = 1_000) -> AssetVersion {
        AssetVersion(path: path, size: size, modifiedNanoseconds: 1, inode: 7, device: 1)
    }

    static func key(_ asset: AssetVersion, _ kind: SlotKind = large) -> CacheKey {
        CacheKey(asset: asset, kind: kind, scale: 1, encoder: EncoderSettings())
    }

    static func makeJob(_ asset: AssetVersion, _ kind: SlotKind = large) -> (UInt64) -> RenderJob {
        { generation in
            RenderJob(key: key(asset, kind), asset: asset, absolutePath: "/assets/" + asset.path,
                      request: ThumbnailRequest(kind: kind, scale: 1), generation: generation)
        }
    }

    /// Attaches a fresh waiter of `priority` to the job for `asset` and `kind`.
    @discardableResult
    static func attach(_ table: JobTableProbe, _ asset: AssetVersion, _ kind: SlotKind = large, priority: Priority = .visible,
                       parks: Bool = false, owner: String? = nil) -> (JobTable.Attachment, WaiterRef) {
        let waiter = Waiter(id: table.makeID(), slot: nil, token: nil, priority: priority, completion: { _ in }, owner: owner)
        let key = key(asset, kind)
        let attachment = table.attach(waiter, key: key, parks: parks, makeJob: makeJob(asset, kind))
        return (attachment, WaiterRef(digest: key.digest, waiterID: waiter.id))
    }

    @Test func twoWaitersOneJob() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        let asset = Self.version("a.jpg")
        let (first, one) = Self.attach(table, asset)
        let (second, two) = Self.attach(table, asset, priority: .prefetch)
        #expect(first == .queued && second == .coalesced(wakesWorker: false))
        #expect(table.records.count == 1 && table.queuedJobs == 1)
        let group = try #require(table.popGroup(maxJobs: 8))
        #expect(group.count == 1 && table.runningJobs == 1 && table.queuedJobs == 0)
        // A waiter may still join a running job.
        let (late, three) = Self.attach(table, asset)
        #expect(late == .coalesced(wakesWorker: false))
        let answered = table.finish(group[0]).map(\.id).sorted()
        #expect(answered == [one, two, three].map(\.waiterID).sorted())
        #expect(table.runningJobs == 0 && table.records.isEmpty)
    }

    @Test func detachingTheLastWaiterDropsAQueuedJob() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        let (_, one) = Self.attach(table, Self.version("a.jpg"))
        let (_, two) = Self.attach(table, Self.version("a.jpg"))
        #expect(table.detach(one)?.effect == .kept)
        #expect(table.detach(one) == nil, "a waiter leaves once")
        #expect(table.detach(two)?.effect == .dropped)
        #expect(table.queuedJobs == 0 && table.records.isEmpty)
        // Its queue entry is stale now: skipped.
        #expect(table.popGroup(maxJobs: 8) == nil)
    }

    @Test func detachingTheLastWaiterCancelsARunningJob() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        let (_, only) = Self.attach(table, Self.version("a.jpg"))
        let job = try #require(table.popGroup(maxJobs: 8)?.first)
        #expect(table.detach(only)?.effect == .cancelled)
        #expect(job.isCancelled)
        #expect(table.finish(job).isEmpty, "nobody is left to answer")
        #expect(table.runningJobs == 0)
    }

    @Test func withoutCancellationAnAbandonedJobStays() throws {
        let table = JobTableProbe(maxQueuedJobs: 10, cancelsAbandonedWork: false)
        let (_, only) = Self.attach(table, Self.version("a.jpg"))
        #expect(table.detach(only)?.effect == .kept)
        #expect(table.popGroup(maxJobs: 8)?.count == 1)
    }

    @Test func aRaisedPriorityRequeuesAndTheStaleEntryIsSkipped() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        Self.attach(table, Self.version("batch.jpg"), priority: .batch)
        Self.attach(table, Self.version("prefetch.jpg"), priority: .prefetch)
        // A visible waiter for the batch job moves it first.
        let (raised, _) = Self.attach(table, Self.version("batch.jpg"), priority: .visible)
        #expect(raised == .coalesced(wakesWorker: false))
        #expect(table[Self.key(Self.version("batch.jpg")).digest]?.priority == .visible)
        #expect(table.popGroup(maxJobs: 8)?.first?.asset.path == "batch.jpg")
        #expect(table.popGroup(maxJobs: 8)?.first?.asset.path == "prefetch.jpg")
        // The batch job's old entry is still in the batch bucket, and skipped.
        #expect(table.popGroup(maxJobs: 8) == nil)
    }

    @Test func aLeavingWaiterLowersTheJobToTheOthers() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        Self.attach(table, Self.version("low.jpg"), priority: .batch)
        let (_, visible) = Self.attach(table, Self.version("low.jpg"), priority: .visible)
        Self.attach(table, Self.version("other.jpg"), priority: .prefetch)
        #expect(table.detach(visible)?.effect == .kept)
        #expect(table[Self.key(Self.version("low.jpg")).digest]?.priority == .batch)
        #expect(table.popGroup(maxJobs: 8)?.first?.asset.path == "other.jpg")
        #expect(table.popGroup(maxJobs: 8)?.first?.asset.path == "low.jpg")
        #expect(table.popGroup(maxJobs: 8) == nil)
    }

    @Test func parkedJobsWaitUntilUnparked() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        let (parked, _) = Self.attach(table, Self.version("a.jpg"), parks: true)
        guard case .parked(let generation) = parked else { Issue.record("expected parked, got \(parked)"); return }
        #expect(table.queuedJobs == 1, "a parked job counts against the queue")
        #expect(table.popGroup(maxJobs: 8) == nil)
        // Another waiter from a cell in motion leaves it parked.
        #expect(Self.attach(table, Self.version("a.jpg"), parks: true).0 == .coalesced(wakesWorker: false))
        #expect(table.popGroup(maxJobs: 8) == nil)
        #expect(!table.unpark(digest: Self.key(Self.version("a.jpg")).digest, generation: generation + 1), "another job's debounce")
        #expect(table.unpark(digest: Self.key(Self.version("a.jpg")).digest, generation: generation))
        #expect(!table.unpark(digest: Self.key(Self.version("a.jpg")).digest, generation: generation), "once")
        #expect(table.popGroup(maxJobs: 8)?.count == 1)
        #expect(table.popGroup(maxJobs: 8) == nil)
    }

    @Test func aSettledWaiterUnparksAtOnce() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        Self.attach(table, Self.version("a.jpg"), parks: true)
        #expect(Self.attach(table, Self.version("a.jpg")).0 == .coalesced(wakesWorker: true))
        #expect(table.popGroup(maxJobs: 8)?.count == 1)
    }

    @Test func oneDecodeTakesTheSiblingsOfTheSameVersion() throws {
        let table = JobTableProbe(maxQueuedJobs: 20)
        let asset = Self.version("a.jpg")
        let kinds = (1...4).map { SlotKind(name: "k\($0)", widthPoints: Double(16 * $0), heightPoints: Double(16 * $0)) }
        for kind in kinds { Self.attach(table, asset, kind, priority: .prefetch) }
        // The same path at another version, and a parked sibling: not part of this decode.
        Self.attach(table, Self.version("a.jpg", size: 2_000), priority: .prefetch)
        Self.attach(table, asset, Self.small, parks: true)
        let first = try #require(table.popGroup(maxJobs: 3))
        #expect(first.count == 3)
        #expect(first.allSatisfy { $0.asset == asset })
        #expect(first[0].request.kind == kinds[0], "the most urgent job leads")
        let second = try #require(table.popGroup(maxJobs: 3))
        #expect(second.count == 1 && second[0].asset == asset)
        #expect(Set((first + second).map(\.request.kind.name)) == Set(kinds.map(\.name)))
        let third = try #require(table.popGroup(maxJobs: 3))
        #expect(third.count == 1 && third[0].asset.size == 2_000)
        #expect(table.popGroup(maxJobs: 3) == nil)
        #expect(table.runningJobs == 5 && table.queuedJobs == 1, "the parked one is still queued")
    }

    @Test func theQueueBoundLeavesAQuarterToVisibleRequests() throws {
        let table = JobTableProbe(maxQueuedJobs: 8)
        #expect(table.queueLimit(for: .visible) == 8)
        #expect(table.queueLimit(for: .prefetch) == 6 && table.queueLimit(for: .batch) == 6)
        for index in 0..<6 { #expect(Self.attach(table, Self.version("p\(index).jpg"), priority: .prefetch).0 == .queued) }
        #expect(Self.attach(table, Self.version("p6.jpg"), priority: .prefetch).0 == .refused)
        #expect(Self.attach(table, Self.version("b.jpg"), priority: .batch).0 == .refused)
        #expect(Self.attach(table, Self.version("v0.jpg")).0 == .queued)
        #expect(Self.attach(table, Self.version("v1.jpg")).0 == .queued)
        #expect(Self.attach(table, Self.version("v2.jpg")).0 == .refused)
        // Joining a job that exists takes no queue room.
        #expect(Self.attach(table, Self.version("p0.jpg"), priority: .batch).0 == .coalesced(wakesWorker: false))
        #expect(table.queuedJobs == 8)
        // A job taken by a worker frees its place.
        _ = table.popGroup(maxJobs: 8)
        #expect(Self.attach(table, Self.version("v2.jpg")).0 == .queued)
    }

    @Test func visibleNewestFirstThenPrefetchAndBatchOldestFirst() throws {
        let table = JobTableProbe(maxQueuedJobs: 20)
        for (name, priority) in [("b1", Priority.batch), ("p1", .prefetch), ("v1", .visible), ("p2", .prefetch),
                                 ("b2", .batch), ("v2", .visible)] {
            Self.attach(table, Self.version(name + ".jpg"), priority: priority)
        }
        var order: [String] = []
        while let group = table.popGroup(maxJobs: 8) { order += group.map(\.asset.path) }
        #expect(order == ["v2.jpg", "v1.jpg", "p1.jpg", "p2.jpg", "b1.jpg", "b2.jpg"])
    }

    @Test func shutdownTakesTheQueuedJobsOnly() throws {
        let table = JobTableProbe(maxQueuedJobs: 10)
        Self.attach(table, Self.version("running.jpg"))
        let running = try #require(table.popGroup(maxJobs: 8)?.first)
        Self.attach(table, Self.version("queued.jpg"))
        Self.attach(table, Self.version("queued.jpg"))
        Self.attach(table, Self.version("parked.jpg"), parks: true)
        #expect(table.removeQueued().count == 3)
        #expect(table.queuedJobs == 0 && table.records.count == 1)
        #expect(table.finish(running).count == 1)
    }
}

/// Holds a job table for the tests: `#expect` cannot call a mutating method on a value it
/// captured, so the probe forwards each call to the table it owns.
final class JobTableProbe {
    private(set) var table: JobTable

    init(maxQueuedJobs: Int, cancelsAbandonedWork: Bool = true, maxRunningPerOwner: Int = .max) {
        table = JobTable(maxQueuedJobs: maxQueuedJobs, cancelsAbandonedWork: cancelsAbandonedWork,
                         maxRunningPerOwner: maxRunningPerOwner)
    }

    var records: [String: JobRecord] { table.records }
    var queuedJobs: Int { table.queuedJobs }
    var runningJobs: Int { table.runningJobs }
    var runningByOwner: [String: Int] { table.runningByOwner }
    var hasHeldBackJobs: Bool { table.hasHeldBackJobs }
    subscript(digest: String) -> JobRecord? { table[digest] }
    func queueLimit(for priority: Priority) -> Int { table.queueLimit(for: priority) }

    func makeID() -> UInt64 { table.makeID() }
    func attach(_ waiter: Waiter, key: CacheKey, parks: Bool, makeJob: (UInt64) -> RenderJob) -> JobTable.Attachment {
        table.attach(waiter, key: key, parks: parks, makeJob: makeJob)
    }
    func unpark(digest: String, generation: UInt64) -> Bool { table.unpark(digest: digest, generation: generation) }
    func detach(_ reference: WaiterRef) -> (waiter: Waiter, effect: JobTable.Detachment)? { table.detach(reference) }
    func popGroup(maxJobs: Int) -> [RenderJob]? { table.popGroup(maxJobs: maxJobs) }
    func finish(_ job: RenderJob) -> [Waiter] { table.finish(job) }
    func removeQueued() -> [Waiter] { table.removeQueued() }
}
