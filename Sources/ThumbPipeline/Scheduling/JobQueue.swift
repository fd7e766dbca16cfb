/// Queued jobs by priority: visible newest-first (the cell on screen now matters most),
/// prefetch and batch oldest-first. Entries are removed lazily: a job that was cancelled,
/// started, or moved to another priority leaves a stale entry that `pop` skips, and the
/// buckets are compacted when stale entries outnumber live ones.
struct JobQueue {
    struct Entry: Equatable {
        let digest: String
        let generation: UInt64
    }

    private var visible: [Entry] = []
    private var prefetch: [Entry] = []
    private var prefetchHead = 0
    private var batch: [Entry] = []
    private var batchHead = 0

    mutating func push(_ entry: Entry, priority: Priority) {
        switch priority {
        case .visible: visible.append(entry)
        case .prefetch: prefetch.append(entry)
        case .batch: batch.append(entry)
        }
    }

    /// The next entry for which `isLive(entry, priority)` holds, most urgent first.
    mutating func pop(isLive: (Entry, Priority) -> Bool) -> Entry? {
        while let entry = visible.popLast() {
            if isLive(entry, .visible) { return entry }
        }
        while prefetchHead < prefetch.count {
            let entry = prefetch[prefetchHead]
            prefetchHead += 1
            if isLive(entry, .prefetch) { return entry }
        }
        while batchHead < batch.count {
            let entry = batch[batchHead]
            batchHead += 1
            if isLive(entry, .batch) { return entry }
        }
        compactAll(isLive: isLive)
        return nil
    }

    /// Drops stale entries once they dominate (keeps memory bounded during a fast fling).
    mutating func compactIfNeeded(liveCount: Int, isLive: (Entry, Priority) -> Bool) {
        let stored = visible.count + (prefetch.count - prefetchHead) + (batch.count - batchHead)
        if stored > 2 * liveCount + 64 { compactAll(isLive: isLive) }
    }

    private mutating func compactAll(isLive: (Entry, Priority) -> Bool) {
        visible = visible.filter { isLive($0, .visible) }
        prefetch = prefetch[prefetchHead...].filter { isLive($0, .prefetch) }
        prefetchHead = 0
        batch = batch[batchHead...].filter { isLive($0, .batch) }
        batchHead = 0
    }
}
