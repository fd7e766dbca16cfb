import Glibc
import Testing
import ThumbImaging
@testable import ThumbPipeline
import ThumbSystem

/// The memory cache's per-asset index, its budget of real bytes, and its vouches.
@Suite struct MemoryCacheTests {
    /// A thumbnail shaped like the daemon's: a path two folders deep, a real key, a cache path.
    static func entry(_ path: String, bytes: Int = 200, kind: SlotKind = PipelineFixture.large, scale: Int = 1,
                      version: Int64 = 1) -> CachedThumbnail {
        let key = CacheKey(asset: Self.version(path, version), kind: kind, scale: scale, encoder: EncoderSettings())
        return CachedThumbnail(key: key, bytes: [UInt8](repeating: 7, count: bytes),
                               filePath: "/var/cache/thumbd/thumbnails/\(key.digest.prefix(2))/\(key.digest).jpg",
                               format: .jpeg, width: 256, height: 171)
    }

    static func path(_ index: Int) -> String { "shop/folder\(index / 100)/IMG_\(100_000 + index).jpg" }

    final class Authority: VouchAuthority, @unchecked Sendable {
        var vouches = true
    }

    @Test func removingAnAssetVisitsOnlyItsOwnEntries() {
        let cache = MemoryCache(byteBudget: 1 << 30)
        for index in 0..<20_000 { cache.insert(Self.entry(Self.path(index))) }
        for scale in 1...3 { cache.insert(Self.entry("one/asset.jpg", scale: scale)) }
        #expect(cache.statistics.entries == 20_003)
        cache.removeThumbnails(ofAsset: "one/asset.jpg")
        // The scan this replaced looked at all 20,003 entries for every event.
        #expect(cache.slotsVisitedByRemovals == 3)
        #expect(cache.statistics.entries == 20_000 && cache.entryCount(ofAsset: "one/asset.jpg") == 0)
        cache.removeThumbnails(ofAsset: "not/cached.jpg")
        #expect(cache.slotsVisitedByRemovals == 3)
        #expect(cache.thumbnail(for: Self.entry(Self.path(7)).key) != nil)
    }

    @Test func aBudgetOfSmallThumbnailsCountsTheirOverhead() {
        // Counting thumbnail bytes only, 10 MB held 50,000 of these 200-byte thumbnails (and the
        // process grew by 3-4 times the budget).
        let budget = 10 << 20
        let cache = MemoryCache(byteBudget: budget)
        for index in 0..<100_000 { cache.insert(Self.entry(Self.path(index))) }
        let (bytes, entries) = cache.statistics
        #expect(bytes <= budget)
        #expect(entries > 1_000 && entries < 10_000, "\(entries) entries in \(budget) bytes")
        // The most recent are the ones kept.
        #expect(cache.thumbnail(for: Self.entry(Self.path(99_999)).key) != nil)
        #expect(cache.thumbnail(for: Self.entry(Self.path(0)).key) == nil)
    }

    /// Heap in use now (every arena, mmapped chunks included).
    static func heapBytes() -> Int { HeapUsage.bytesInUse }

    /// In a child process of its own (an exit test): in this one other suites allocate and free
    /// all the while, and under a loaded full run the smallest growth of three tries fell to a
    /// tenth of the cache's own (CI flake).
    @Test func theCountedBytesCoverTheHeapTheEntriesTake() async {
        await #expect(processExitsWith: .success) {
            let count = 20_000
            let entries = (0..<count).map { MemoryCacheTests.entry(MemoryCacheTests.path($0)) }
            var growths: [Int] = []
            var counted = 0
            for _ in 0..<3 {
                let before = MemoryCacheTests.heapBytes()
                let cache = MemoryCache(byteBudget: 1 << 30)
                for entry in entries { cache.insert(entry) }
                // A server answering each entry once keeps its reserve there: not made here.
                let grown = MemoryCacheTests.heapBytes() - before
                counted = cache.statistics.bytes - count * MemoryCache.servingReserveBytes
                growths.append(grown)
                withExtendedLifetime(cache) {}
            }
            let measured = growths.min() ?? 0
            // The entries themselves (bytes arrays, keys) existed before the cache: add what they hold.
            let held = entries.reduce(0) { total, entry in
                total + MemoryCache.Accounting.arrayBytes(entry.bytes) + MemoryCache.Accounting.string(entry.key.descriptor)
                    + MemoryCache.Accounting.string(entry.key.digest) + MemoryCache.Accounting.string(entry.key.assetPath)
                    + MemoryCache.Accounting.string(entry.filePath)
            }
            let perEntryMeasured = Double(measured + held) / Double(count)
            let perEntryCounted = Double(counted) / Double(count)
            // Covers the heap, and not wildly more: the budget should hold about what it says.
            let holds = perEntryCounted >= perEntryMeasured && perEntryCounted <= perEntryMeasured * 1.5 + 64
            if !holds { print("counted \(perEntryCounted) B/entry, heap \(perEntryMeasured) B/entry (growths \(growths))") }
            exit(holds ? 0 : 1)
        }
    }

    @Test func vouchesAreRefusedOnceAnEventCameAfterTheResolve() throws {
        let cache = MemoryCache(byteBudget: 1 << 30)
        let authority = Authority()
        cache.startVouching(authority: authority)
        let thumbnail = Self.entry("a/b.jpg")
        cache.insert(thumbnail)
        let variant = ThumbnailVariant(kind: PipelineFixture.large, scale: 1, format: nil)
        let version = Self.version("a/b.jpg")
        let generation = cache.currentVouchGeneration
        cache.dropVouch(ofAsset: "a/b.jpg") // the event, between the resolve and the vouch
        #expect(!cache.vouch(for: version, absolutePath: "/root/a/b.jpg", variant: variant, key: thumbnail.key, generation: generation))
        #expect(cache.vouchedThumbnail(assetPath: "a/b.jpg", variant: variant) == nil)
        #expect(cache.vouch(for: version, absolutePath: "/root/a/b.jpg", variant: variant, key: thumbnail.key,
                            generation: cache.currentVouchGeneration))
        #expect(cache.vouchedThumbnail(assetPath: "a/b.jpg", variant: variant) == thumbnail)
        #expect(cache.vouchedThumbnail(assetPath: "a/b.jpg", variant: .init(kind: PipelineFixture.avatar, scale: 3, format: nil)) == nil)
        // The watcher stops: nothing vouched any more.
        authority.vouches = false
        #expect(cache.vouchedThumbnail(assetPath: "a/b.jpg", variant: variant) == nil)
        #expect(cache.vouchCount == 0)
    }

    /// The version `entry` keys its thumbnail with.
    static func version(_ path: String, _ version: Int64 = 1) -> AssetVersion {
        AssetVersion(path: path, size: 123_456, modifiedNanoseconds: 1_700_000_000_123_456_789 + version, inode: 9_876_543, device: 2049)
    }

    @Test func aFolderEventDropsTheVouchesUnderItAndNoOthers() throws {
        let cache = MemoryCache(byteBudget: 1 << 30)
        cache.startVouching(authority: Authority())
        let variant = ThumbnailVariant(kind: PipelineFixture.large, scale: 1, format: nil)
        let paths = ["a/x.jpg", "a/b/y.jpg", "a/b/c/z.jpg", "ab/w.jpg", "top.jpg", "d/e/f.jpg"]
        for path in paths {
            let thumbnail = Self.entry(path)
            cache.insert(thumbnail)
            #expect(cache.vouch(for: Self.version(path), absolutePath: "/r/" + path, variant: variant,
                                key: thumbnail.key, generation: cache.currentVouchGeneration))
        }
        #expect(cache.vouchCount == 6)
        cache.dropVouches(underFolder: "a/b")
        #expect(cache.vouchCount == 4)
        #expect(cache.vouchedThumbnail(assetPath: "a/b/c/z.jpg", variant: variant) == nil)
        #expect(cache.vouchedThumbnail(assetPath: "a/x.jpg", variant: variant) != nil)
        cache.dropVouches(underFolder: "a")
        #expect(cache.vouchedThumbnail(assetPath: "ab/w.jpg", variant: variant) != nil, "a sibling with the same prefix stays")
        #expect(cache.vouchCount == 3)
        cache.dropVouch(ofAsset: "top.jpg")
        #expect(cache.vouchCount == 2 && cache.vouchedThumbnail(assetPath: "top.jpg", variant: variant) == nil)
        cache.dropAllVouches()
        #expect(cache.vouchCount == 0 && cache.vouchedThumbnail(assetPath: "d/e/f.jpg", variant: variant) == nil)
        // The entries themselves stay: only the vouches went.
        #expect(cache.statistics.entries == 6)
        // Every folder node went with its vouches: only the thumbnails' bytes and records are left.
        #expect(cache.state.withLock { $0.folders.isEmpty })
    }

    @Test func vouchesLeaveWithTheirAssetsLastEntry() throws {
        let one = Self.entry("a/one.jpg")
        let probe = MemoryCache(byteBudget: 1 << 30)
        probe.insert(one)
        let cache = MemoryCache(byteBudget: probe.statistics.bytes * 3)
        cache.startVouching(authority: Authority())
        let variant = ThumbnailVariant(kind: PipelineFixture.large, scale: 1, format: nil)
        cache.insert(one)
        #expect(cache.vouch(for: Self.version("a/one.jpg"), absolutePath: "/r/a/one.jpg", variant: variant,
                            key: one.key, generation: cache.currentVouchGeneration))
        #expect(cache.vouchCount == 1)
        // Evicted by newer entries: the vouch is gone with it, so vouches never outnumber entries.
        for index in 0..<10 { cache.insert(Self.entry("b/\(index).jpg")) }
        #expect(cache.thumbnail(for: one.key) == nil)
        #expect(cache.vouchCount == 0)
        #expect(cache.state.withLock { $0.records[ExactPath("a/one.jpg")] == nil && $0.folders.isEmpty })
    }
}
