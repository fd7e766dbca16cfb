/// Everything the pipeline's lock guards.
struct PipelineState {
    struct WaiterRef: Equatable {
        let digest: String
        let waiterID: UInt64
    }

    struct SlotRecord {
        var token: UInt64
        var liveWaiter: WaiterRef?
        var lastUse: ContinuousClock.Instant
    }

    var slots: [SlotID: SlotRecord] = [:]
    /// Prefetch batches by id: their waiters, so that a batch can be withdrawn.
    var groups: [String: [WaiterRef]] = [:]
    var jobs: [String: JobRecord] = [:]
    var queue = JobQueue()
    var queuedJobs = 0
    var runningRenders = 0
    var nextID: UInt64 = 0
    var shuttingDown = false
    var metrics = PipelineMetrics()

    mutating func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Whether a queue entry still stands for a queued job at that priority.
    func isLive(_ entry: JobQueue.Entry, _ priority: Priority) -> Bool {
        guard let record = jobs[entry.digest] else { return false }
        return record.job.generation == entry.generation && record.phase == .queued && record.priority == priority
    }

    /// The most urgent queued job's entry. (The queue is moved out while it asks `isLive`,
    /// which reads the jobs: one exclusive access at a time.)
    mutating func popQueued() -> JobQueue.Entry? {
        var queue = self.queue
        self.queue = JobQueue()
        defer { self.queue = queue }
        return queue.pop { isLive($0, $1) }
    }

    mutating func compactQueueIfNeeded() {
        var queue = self.queue
        self.queue = JobQueue()
        defer { self.queue = queue }
        queue.compactIfNeeded(liveCount: queuedJobs) { isLive($0, $1) }
    }

    /// Makes room for one more slot: forgets idle slots past `idleSeconds`, then the least
    /// recently used idle ones. False when every remembered slot has a live request.
    mutating func makeRoomForSlot(maxSlots: Int, idleSeconds: Double, now: ContinuousClock.Instant) -> Bool {
        guard slots.count >= maxSlots else { return true }
        let cutoff = now - .milliseconds(Int64(idleSeconds * 1000))
        slots = slots.filter { $0.value.liveWaiter != nil || $0.value.lastUse > cutoff }
        if slots.count >= maxSlots {
            let idle = slots.filter { $0.value.liveWaiter == nil }.sorted { $0.value.lastUse < $1.value.lastUse }
            for (slot, _) in idle.prefix(slots.count - maxSlots * 9 / 10) { slots[slot] = nil }
        }
        return slots.count < maxSlots
    }
}
