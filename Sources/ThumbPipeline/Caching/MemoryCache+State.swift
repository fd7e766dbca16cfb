import ThumbSystem

extension MemoryCache {
    /// One place of the slab: an entry, or a free place (`thumbnail` nil) waiting for reuse.
    struct Slot {
        var thumbnail: CachedThumbnail?
        /// Neighbours in the use order (-1: none): `newer` towards `State.newest`.
        var newer = -1
        var older = -1
        /// What the entry counts against the budget (`Accounting.entryBytes`).
        var countedBytes = 0
    }

    /// The per-asset index: one record for each asset that has entries.
    struct AssetRecord {
        /// Its entries' slots (an asset has a handful: one per kind, scale and format asked).
        var slots: [Int] = []
        /// The version the folder watcher vouches for, if any (see `MemoryCache+Vouches`).
        var vouch: Vouch?
    }

    /// Entries in a slab with a doubly linked use order by slot number: a hit, an insert and an
    /// eviction are O(1) and hash the digest at most once; an asset's entries are found through
    /// its record, never by a scan.
    struct State {
        var slots: [Slot] = []
        var freeSlots: [Int] = []
        /// Digest → slot.
        var index: [String: Int] = [:]
        /// Asset path → its entries and vouch.
        /// By asset path, as bytes (`ExactPath`): two spellings of one name are two files.
        var records: [ExactPath: AssetRecord] = [:]
        /// Folders holding vouched assets, and their ancestors (see `MemoryCache+Vouches`).
        var folders: [ExactPath: FolderNode] = [:]
        var newest = -1
        var oldest = -1
        /// Bytes of the entries, records, vouches and folder nodes; the tables' own storage is
        /// `tableBytes` (tables never shrink, so that part stays at the high-water mark).
        var itemBytes = 0
        var tableBytes = 0
        /// What vouches rest on; nil: nothing is vouched (no watcher, or it stopped).
        var authority: (any VouchAuthority)?
        /// Assets with a vouch.
        var vouchedAssets = 0
        /// Slots looked at by `removeAsset` (tests: an event touches only its own entries).
        var slotsVisitedByRemovals = 0

        var countedBytes: Int { itemBytes + tableBytes }

        mutating func touch(_ slot: Int) {
            guard newest != slot else { return }
            unlink(slot)
            pushNewest(slot)
        }

        mutating func unlink(_ slot: Int) {
            let (newer, older) = (slots[slot].newer, slots[slot].older)
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            if older >= 0 { slots[older].newer = newer } else { oldest = newer }
            slots[slot].newer = -1
            slots[slot].older = -1
        }

        mutating func pushNewest(_ slot: Int) {
            slots[slot].older = newest
            slots[slot].newer = -1
            if newest >= 0 { slots[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        mutating func insert(_ thumbnail: CachedThumbnail, countedBytes: Int) {
            if let existing = index[thumbnail.key.digest] { removeSlot(existing) }
            let slot: Int
            if let free = freeSlots.popLast() {
                slot = free
            } else {
                slot = slots.count
                slots.append(Slot())
            }
            slots[slot] = Slot(thumbnail: thumbnail, countedBytes: countedBytes)
            index[thumbnail.key.digest] = slot
            itemBytes += countedBytes
            let path = thumbnail.key.assetPath
            var record = AssetRecord()
            if let existing = records.removeValue(forKey: ExactPath(path)) {
                record = existing
                itemBytes -= Accounting.recordBytes(path: path, record)
            }
            record.slots.append(slot)
            itemBytes += Accounting.recordBytes(path: path, record)
            records[ExactPath(path)] = record
            pushNewest(slot)
            updateTableBytes()
        }

        /// Removes the entry at `slot`; its asset's record goes with its last entry.
        mutating func removeSlot(_ slot: Int) {
            guard let thumbnail = slots[slot].thumbnail else { return }
            unlink(slot)
            index.removeValue(forKey: thumbnail.key.digest)
            itemBytes -= slots[slot].countedBytes
            slots[slot] = Slot()
            freeSlots.append(slot)
            let path = thumbnail.key.assetPath
            guard var record = records[ExactPath(path)] else { return }
            itemBytes -= Accounting.recordBytes(path: path, record)
            record.slots.removeAll { $0 == slot }
            if var vouch = record.vouch {
                itemBytes -= vouch.countedBytes
                vouch.aliases.removeAll { $0.slot == slot }
                vouch.countedBytes = Accounting.vouchBytes(vouch)
                itemBytes += vouch.countedBytes
                record.vouch = vouch
            }
            if record.slots.isEmpty {
                // Only assets with entries are vouched for: that bounds the vouches by the budget.
                if record.vouch != nil { dropVouch(of: path, in: &record) }
                records.removeValue(forKey: ExactPath(path))
            } else {
                itemBytes += Accounting.recordBytes(path: path, record)
                records[ExactPath(path)] = record
            }
        }

        /// Drops every entry of the asset (and its vouch), visiting only its own slots.
        mutating func removeAsset(_ path: String) {
            guard let record = records[ExactPath(path)] else { return }
            slotsVisitedByRemovals += record.slots.count
            for slot in record.slots { removeSlot(slot) }
        }

        /// Evicts the least recently used entries until the counted bytes fit `budget`.
        mutating func evict(toFit budget: Int) {
            while countedBytes > budget, oldest >= 0 { removeSlot(oldest) }
        }

        /// The storage of the tables themselves, from their capacities (a table grows in steps
        /// and never shrinks: what it holds now is what it costs).
        mutating func updateTableBytes() {
            tableBytes = Accounting.arrayBytes(slots) + Accounting.arrayBytes(freeSlots)
                + Accounting.dictionaryBytes(index) + Accounting.dictionaryBytes(records) + Accounting.dictionaryBytes(folders)
        }
    }
}
