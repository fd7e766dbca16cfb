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

    /// The next entry for which `isLive(entry, priority)` holds and that may start, most urgent
    /// first. `turn(entry)` is nil for an entry that may not start yet (its callers hold their
    /// share of the renderers): it keeps its place, passed over, not dropped. Among visible
    /// entries the lowest turn goes first (the caller served longest ago: a round over the
    /// callers), the newest of equal turns; prefetch and batch go oldest first.
    mutating func pop(isLive: (Entry, Priority) -> Bool, turn: (Entry) -> UInt64? = { _ in 0 }) -> Entry? {
        var best: (index: Int, turn: UInt64)?
        var index = visible.count
        while index > 0 {
            index -= 1
            let entry = visible[index]
            if !isLive(entry, .visible) {
                if index == visible.count - 1 { visible.removeLast() }
                continue
            }
            guard let entryTurn = turn(entry), entryTurn < (best?.turn ?? .max) else { continue }
            best = (index, entryTurn)
            if entryTurn == 0 { break } // none comes before it
        }
        if let best { return visible.remove(at: best.index) }
        let mayStart = { (entry: Entry) in turn(entry) != nil }
        if let entry = Self.popOldest(&prefetch, head: &prefetchHead, { isLive($0, .prefetch) }, mayStart) { return entry }
        if let entry = Self.popOldest(&batch, head: &batchHead, { isLive($0, .batch) }, mayStart) { return entry }
        compactAll(isLive: isLive)
        return nil
    }

    private static func popOldest(_ entries: inout [Entry], head: inout Int, _ isLive: (Entry) -> Bool,
                                  _ mayStart: (Entry) -> Bool) -> Entry? {
        var index = head
        while index < entries.count {
            let entry = entries[index]
            if !isLive(entry) {
                if index == head { head += 1 }
            } else if mayStart(entry) {
                if index == head { head += 1 } else { entries.remove(at: index) }
                return entry
            }
            index += 1
        }
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
