extension MemoryCache {
    /// What things cost in memory, from the layouts of Swift's native storage and glibc's
    /// malloc. Small thumbnails cost several times their bytes (a 200-byte thumbnail about
    /// 2 KB: key strings, path, table slots, the server's prepared response), which counting the
    /// bytes alone let RSS grow to 3-4x the budget. `MemoryCacheAccountingTests` holds these
    /// estimates to the heap growth measured for many entries.
    enum Accounting {
        /// What a server may keep beside an entry to answer it again (`CachedThumbnail.serving`):
        /// the ThumbServer keeps up to two prepared libmicrohttpd responses (with and without
        /// `Vary: Accept`: each a struct, mutex and header list, two strings a header) and its
        /// header lines. `ServeHitPathTests` measures both at about 2,040 bytes an entry.
        static let servingReserveBytes = 2304

        /// glibc's chunk for `requested` bytes: 8 bytes of header, rounded up to 16, at least 32;
        /// from 128 KiB (the mmap threshold) whole pages.
        static func malloc(_ requested: Int) -> Int {
            guard requested > 0 else { return 0 }
            if requested >= 128 << 10 { return (requested + 16 + 4095) & ~4095 }
            return max(32, (requested + 8 + 15) & ~15)
        }

        /// A native string's storage: 32 bytes of header, the UTF-8 and a NUL; none for up to
        /// 15 bytes (held inline).
        static func string(_ text: String) -> Int {
            let count = text.utf8.count
            return count <= 15 ? 0 : malloc(32 + count + 1)
        }

        /// An array's storage: 32 bytes of header and its capacity (none while empty).
        static func arrayBytes<Element>(_ array: [Element]) -> Int {
            array.capacity == 0 ? 0 : malloc(32 + array.capacity * MemoryLayout<Element>.stride)
        }

        /// A native hash table's storage: 64 bytes of header, a bitmap word per 64 buckets and
        /// the buckets; capacity is 3/4 of a power-of-two bucket count.
        static func tableBytes(capacity: Int, bucketStride: Int) -> Int {
            guard capacity > 0 else { return 0 }
            var buckets = 1
            while buckets * 3 / 4 < capacity { buckets <<= 1 }
            return malloc(64 + max(1, buckets / 64) * 8 + buckets * bucketStride)
        }

        static func dictionaryBytes<Key, Value>(_ dictionary: [Key: Value]) -> Int {
            tableBytes(capacity: dictionary.capacity, bucketStride: MemoryLayout<Key>.stride + MemoryLayout<Value>.stride)
        }

        static func setBytes<Element>(_ set: Set<Element>) -> Int {
            tableBytes(capacity: set.capacity, bucketStride: MemoryLayout<Element>.stride)
        }

        /// One entry, beside its slot in the tables: the bytes' array, the key's strings (the
        /// digest is shared with the index's key), the cache file's path, the serving attachment
        /// and what the server may keep in it.
        static func entryBytes(of thumbnail: CachedThumbnail) -> Int {
            arrayBytes(thumbnail.bytes) + string(thumbnail.key.descriptor) + string(thumbnail.key.digest)
                + string(thumbnail.key.assetPath) + string(thumbnail.filePath)
                + malloc(ServingAttachment.instanceBytes) + servingReserveBytes
        }

        static func recordBytes(path: String, _ record: AssetRecord) -> Int {
            string(path) + arrayBytes(record.slots)
        }

        static func vouchBytes(_ vouch: Vouch) -> Int {
            string(vouch.version.path) + string(vouch.absolutePath) + arrayBytes(vouch.aliases)
        }

        static func folderBytes(_ folder: String, _ node: FolderNode) -> Int {
            string(folder) + setBytes(node.assets) + setBytes(node.subfolders)
        }
    }
}
