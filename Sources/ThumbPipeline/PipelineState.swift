import ThumbImaging

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
    /// What the slot table is charged for its entries (`SlotID.tableBytes` summed).
    var slotTableBytes = 0
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

    /// Makes room for `slot` in a table bounded in count and in bytes (`SlotID.tableBytes`):
    /// forgets idle slots past `idleSeconds`, then the least recently used idle ones, down to 90%
    /// of each bound. False when the slots that have a live request leave no room.
    mutating func makeRoomForSlot(_ slot: SlotID, maxSlots: Int, maxBytes: Int, idleSeconds: Double,
                                  now: ContinuousClock.Instant) -> Bool {
        let cost = slot.tableBytes
        func fits(count: Int, bytes: Int) -> Bool { slots.count < count && slotTableBytes + cost <= bytes }
        guard !fits(count: maxSlots, bytes: maxBytes) else { return true }
        let idleMilliseconds = CheckedConversion.clampedInteger(idleSeconds * 1000, to: 0...(1 << 50))
        let cutoff = now - .milliseconds(idleMilliseconds)
        slots = slots.filter { $0.value.liveWaiter != nil || $0.value.lastUse > cutoff }
        slotTableBytes = slots.keys.reduce(0) { $0 + $1.tableBytes }
        if !fits(count: maxSlots, bytes: maxBytes) {
            let idle = slots.filter { $0.value.liveWaiter == nil }.sorted { $0.value.lastUse < $1.value.lastUse }
            for (forgotten, _) in idle where !fits(count: maxSlots * 9 / 10, bytes: maxBytes * 9 / 10) {
                slots[forgotten] = nil
                slotTableBytes -= forgotten.tableBytes
            }
        }
        return fits(count: maxSlots, bytes: maxBytes)
    }

    /// Remembers a new slot (after `makeRoomForSlot` said yes).
    mutating func insertSlot(_ slot: SlotID, _ record: SlotRecord) {
        if slots.updateValue(record, forKey: slot) == nil { slotTableBytes += slot.tableBytes }
    }
}
