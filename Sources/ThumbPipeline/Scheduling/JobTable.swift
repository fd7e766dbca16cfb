import ThumbImaging

/// The job table: render jobs by digest (one job per cache key: that is coalescing), the
/// requests waiting on each, the priority queue that feeds the workers, and the counts the
/// queue bound and the metrics read. A plain value: the pipeline keeps it under its lock and
/// asks it for decisions (attach, detach, park, pop, finish); the tests ask it directly.
///
/// Phases of a job: queued (in the queue, or parked by the fling debounce and not in it yet),
/// then running (taken by a worker), then gone (`finish`, or dropped once nobody waits).
struct JobTable {
    private(set) var records: [String: JobRecord] = [:]
    private var queue = JobQueue()
    /// Jobs queued or parked (what the queue bound counts).
    private(set) var queuedJobs = 0
    /// Jobs taken by a worker and not finished yet (including dropped ones still stopping).
    private(set) var runningJobs = 0
    private var lastID: UInt64 = 0
    let maxQueuedJobs: Int
    /// Off only to measure what cancellation saves: a job nobody waits for runs anyway.
    let cancelsAbandonedWork: Bool
    /// Renderers (running groups) one caller (`Waiter.owner`) may hold at once. Below the number
    /// of renderers, this keeps one free for everybody else however many renders a caller
    /// queues: its next job waits, while another caller's starts at once.
    let maxRunningPerOwner: Int
    /// Running groups charged to each caller, and the callers each running group is charged to
    /// (by the generation of the group's first job).
    private(set) var runningByOwner: [String: Int] = [:]
    private var chargedOwners: [UInt64: [String]] = [:]
    /// When each caller last started a render (a count of starts): visible work goes round the
    /// callers, the one served longest ago first. Newest-first alone would let a caller that
    /// keeps asking push another's older request back for as long as it keeps asking.
    private(set) var lastStartByOwner: [String: UInt64] = [:]
    private var starts: UInt64 = 0
    /// Callers remembered at once; a forgotten one counts as never served (first in the round).
    static let maxRememberedOwners = 4096

    init(maxQueuedJobs: Int, cancelsAbandonedWork: Bool = true, maxRunningPerOwner: Int = .max) {
        self.maxQueuedJobs = maxQueuedJobs
        self.cancelsAbandonedWork = cancelsAbandonedWork
        self.maxRunningPerOwner = max(1, maxRunningPerOwner)
    }

    /// A fresh id for a waiter or a job generation (never reused).
    mutating func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    /// How many queued jobs there may be when a new job of `priority` joins. Visible requests
    /// may fill the queue; prefetch and batch work only three quarters of it, so that a prefetch
    /// of thousands of thumbnails (or a spool) can never answer the cell on screen 503.
    func queueLimit(for priority: Priority) -> Int {
        priority == .visible ? maxQueuedJobs : maxQueuedJobs - maxQueuedJobs / 4
    }

    subscript(digest: String) -> JobRecord? { records[digest] }

    /// The job of `digest`, queued or running, is to compute its version's placeholder whatever it costs.
    mutating func wantPlaceholder(fromJob digest: String) {
        records[digest]?.placeholderWanted = true
        records[digest]?.job.wantPlaceholder()
    }

    /// Whether the waiter still waits (it was neither answered nor detached).
    func isWaiting(_ reference: WaiterRef) -> Bool {
        records[reference.digest]?.waiters[reference.waiterID] != nil
    }

    /// The queued jobs (parked ones included) by priority, for the metrics' gauge.
    var queuedJobsByPriority: [Priority: Int] {
        var counts: [Priority: Int] = [:]
        for record in records.values where record.phase == .queued { counts[record.priority, default: 0] += 1 }
        return counts
    }

    /// Takes the most urgent queued job that may start for a worker, with the queued jobs for
    /// other kinds of the same asset version riding along (one decode serves them all: a batch
    /// asking for two kinds decodes once), at most `maxJobs` in all. Nil when nothing queued may
    /// start (a stale wake-up: the job it was for was dropped or went with another group; or
    /// every queued job's callers hold their share of the renderers).
    ///
    /// The group is charged to the first job's callers. A sibling rides along only when it has
    /// no caller besides those: another caller's render would make them wait for work not theirs.
    mutating func popGroup(maxJobs: Int) -> [RenderJob]? {
        let records = self.records, running = runningByOwner, share = maxRunningPerOwner, lastStart = lastStartByOwner
        guard let entry = queue.pop(isLive: { Self.isLive($0, $1, in: records) },
                                    turn: { records[$0.digest].flatMap { Self.turn(of: $0, running: running, share: share, lastStart: lastStart) } }),
              let record = records[entry.digest] else { return nil }
        let owners = record.owners
        var group = [record.job]
        for (digest, sibling) in records where group.count < maxJobs
            && digest != entry.digest && sibling.phase == .queued && !sibling.parked
            && sibling.job.asset == record.job.asset && sibling.job.absolutePath == record.job.absolutePath
            && sibling.owners.isSubset(of: owners) {
            group.append(sibling.job)
        }
        // The siblings' queue entries go stale (their phase is no longer queued).
        for job in group {
            self.records[job.key.digest]?.phase = .running
            queuedJobs -= 1
            runningJobs += 1
        }
        if maxRunningPerOwner != .max, !owners.isEmpty {
            chargedOwners[record.job.generation] = Array(owners)
            starts += 1
            if lastStartByOwner.count >= Self.maxRememberedOwners {
                lastStartByOwner = lastStartByOwner.filter { runningByOwner[$0.key] != nil }
            }
            for owner in owners {
                runningByOwner[owner, default: 0] += 1
                lastStartByOwner[owner] = starts
            }
        }
        return group
    }

    /// `popGroup` with what the decode is to know of its waiters as the group leaves the queue.
    mutating func takeGroup(maxJobs: Int) -> RenderGroup? {
        guard let jobs = popGroup(maxJobs: maxJobs) else { return nil }
        let clientWaits = jobs.contains { job in
            guard let record = records[job.key.digest], record.job === job else { return false }
            return record.waitersPriority.map { $0 >= .visible } ?? false
        }
        let background = jobs.allSatisfy { job in
            guard let record = records[job.key.digest], record.job === job else { return false }
            return record.waitersPriority == .batch
        }
        return RenderGroup(jobs: jobs, clientWaits: clientWaits, placesEveryShape: background)
    }

    /// A queued job's turn (`JobQueue.pop`): 0 when a waiter is not rationed (or nothing is), else
    /// the earliest last start among its callers that hold less than their share; nil when all
    /// of them hold their share (it may not start now).
    static func turn(of record: JobRecord, running: [String: Int], share: Int, lastStart: [String: UInt64]) -> UInt64? {
        guard share != .max else { return 0 }
        var turn: UInt64?
        for waiter in record.waiters.values {
            guard let owner = waiter.owner else { return 0 }
            guard running[owner, default: 0] < share else { continue }
            turn = min(turn ?? .max, lastStart[owner] ?? 0)
        }
        return turn
    }

    /// Some queued job is held back by its callers' share (a worker freed by a finish may take it).
    var hasHeldBackJobs: Bool { queuedJobs > 0 && !runningByOwner.isEmpty }

    /// A worker is done with `job`: the waiters to answer with its outcome. None when the job
    /// was dropped while it ran (nobody waited any more) or replaced by a newer one of its key.
    mutating func finish(_ job: RenderJob) -> [Waiter] {
        runningJobs -= 1
        for owner in chargedOwners.removeValue(forKey: job.generation) ?? [] {
            let running = (runningByOwner[owner] ?? 1) - 1
            runningByOwner[owner] = running > 0 ? running : nil
        }
        guard let record = records[job.key.digest], record.job === job else { return [] }
        records[job.key.digest] = nil
        return Array(record.waiters.values)
    }

    /// Shutdown: every queued (or parked) job leaves the table; their waiters, to be answered.
    mutating func removeQueued() -> [Waiter] {
        var waiters: [Waiter] = []
        for (digest, record) in records where record.phase == .queued {
            waiters.append(contentsOf: record.waiters.values)
            records[digest] = nil
            queuedJobs -= 1
        }
        return waiters
    }

    /// Whether a queue entry still stands for a queued, unparked job at that priority: entries
    /// are removed lazily, so a job that was dropped, started, parked or moved to another
    /// priority leaves a stale entry behind that `pop` skips.
    static func isLive(_ entry: JobQueue.Entry, _ priority: Priority, in records: [String: JobRecord]) -> Bool {
        guard let record = records[entry.digest] else { return false }
        return record.job.generation == entry.generation && record.phase == .queued && !record.parked
            && record.priority == priority
    }
}

extension JobTable {
    /// What `attach` decided.
    enum Attachment: Equatable {
        /// The waiter joined the existing job of its key; `wakesWorker` when that put the job in
        /// the queue (a parked job someone on a settled cell now wants).
        case coalesced(wakesWorker: Bool)
        /// A new job, in the queue: a worker is to be woken.
        case queued
        /// A new job, held back by the fling debounce: `unpark(digest:generation:)` it later.
        case parked(generation: UInt64)
        /// A new job would overflow the queue, or the share of it the waiter's priority may use.
        case refused
    }

    /// Adds `waiter` to the job for `key`, or creates one (`makeJob(generation)`) and queues it.
    /// `parks`: the waiter comes from a cell in motion (see `flingDebounceSeconds`).
    mutating func attach(_ waiter: Waiter, key: CacheKey, parks: Bool, makeJob: (UInt64) -> RenderJob) -> Attachment {
        if var record = records[key.digest], record.job.key == key {
            record.waiters[waiter.id] = waiter
            record.placeholderWanted = record.placeholderWanted || waiter.wantsPlaceholder
            if waiter.wantsPlaceholder { record.job.wantPlaceholder() }
            var wakesWorker = false
            if record.parked {
                record.priority = max(record.priority, waiter.priority)
                if !parks {
                    // Someone on a settled cell wants it: no reason to wait any longer.
                    record.parked = false
                    queue.push(.init(digest: key.digest, generation: record.job.generation), priority: record.priority)
                    wakesWorker = true
                }
            } else if record.phase == .queued && waiter.priority >= record.priority {
                // A more urgent (or newer visible) waiter moves the job up: the old entry goes stale.
                record.priority = waiter.priority
                queue.push(.init(digest: key.digest, generation: record.job.generation), priority: waiter.priority)
            }
            records[key.digest] = record
            return .coalesced(wakesWorker: wakesWorker)
        }
        guard queuedJobs < queueLimit(for: waiter.priority) else { return .refused }
        let job = makeJob(makeID())
        var record = JobRecord(job: job, priority: waiter.priority)
        record.waiters[waiter.id] = waiter
        record.placeholderWanted = waiter.wantsPlaceholder
        if waiter.wantsPlaceholder { job.wantPlaceholder() }
        queuedJobs += 1
        if parks {
            record.parked = true
            records[key.digest] = record
            return .parked(generation: job.generation)
        }
        records[key.digest] = record
        queue.push(.init(digest: key.digest, generation: job.generation), priority: waiter.priority)
        let snapshot = records
        queue.compactIfNeeded(liveCount: queuedJobs) { Self.isLive($0, $1, in: snapshot) }
        return .queued
    }

    /// The debounce is over: a parked job that someone still waits for joins the queue.
    /// True when it did (a worker is to be woken).
    mutating func unpark(digest: String, generation: UInt64) -> Bool {
        guard var record = records[digest], record.job.generation == generation, record.parked else { return false }
        record.parked = false
        records[digest] = record
        queue.push(.init(digest: digest, generation: generation), priority: record.priority)
        return true
    }

    /// What became of a job when one of its waiters left.
    enum Detachment: Equatable {
        /// Others still wait on it (it may have moved to their highest priority).
        case kept
        /// Nobody waits: it left the queue before it started.
        case dropped
        /// Nobody waits: it is running, and stops at its next checkpoint.
        case cancelled
    }

    /// Removes a waiter from its job; a job nobody waits for any more is dropped from the
    /// queue, or told to stop at its next checkpoint if it is running. Nil when the waiter was
    /// not waiting any more (answered, or detached already).
    mutating func detach(_ reference: WaiterRef) -> (waiter: Waiter, effect: Detachment)? {
        guard var record = records[reference.digest],
              let waiter = record.waiters.removeValue(forKey: reference.waiterID) else { return nil }
        if record.waiters.isEmpty && cancelsAbandonedWork {
            records[reference.digest] = nil
            if record.phase == .queued {
                queuedJobs -= 1
                return (waiter, .dropped)
            }
            record.job.cancel()
            return (waiter, .cancelled)
        }
        if record.phase == .queued, !record.parked, let highest = record.waitersPriority, highest != record.priority {
            record.priority = highest
            queue.push(.init(digest: reference.digest, generation: record.job.generation), priority: highest)
        }
        records[reference.digest] = record
        return (waiter, .kept)
    }
}
