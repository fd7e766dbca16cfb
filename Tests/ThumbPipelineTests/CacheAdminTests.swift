import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline
import ThumbSystem

/// `thumbd cache` and `/v1/cache` at the index: counts, purges by asset and folder that say what
/// they removed, and a verification of a cache whose files and index disagree.
@Suite struct CacheAdminTests {
    let fixture = try! DiskCacheFixture()

    @Test("a folder's purge names NFC and NFD twins apart, so the memory cache drops both (a String set kept one)")
    func aPurgeNamesTwinsApart() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        let twins = ["x/caf\u{E9}.jpg", "x/cafe\u{301}.jpg"]
        for path in twins { try cache.insert(DiskCacheFixture.thumbnail(cache, DiskCacheFixture.key(path), size: 100)) }
        let purge = cache.purge(under: "x")
        #expect(purge.entries == 2 && purge.assetPaths.count == 2 && Set(twins.map { ExactPath($0) }) == purge.assetPaths, "\(purge)")
    }

    @Test("statistics count the index; purges by asset and by folder say what went, and it is gone")
    func statisticsAndPurges() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        let keys = ["a/x.jpg", "a/y.jpg", "a0/z.jpg", "b/w.jpg"].flatMap { path in
            [DiskCacheFixture.key(path), DiskCacheFixture.key(path, width: 60)]
        }
        for key in keys { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100)) }
        cache.failures.recordFailure(DiskCacheFixture.version("a/broken.jpg"), record: .undecodable, reason: "test")
        _ = try cache.focus.setFocus(FocusRegion(x: 0.5, y: 0.5)!, ofAsset: "b/w.jpg")
        var statistics = cache.index.detailedStatistics
        #expect(statistics.entries == 8 && statistics.bytes == 800 && statistics.assets == 4, "\(statistics)")
        #expect(statistics.failures == 1 && statistics.focusPoints == 1 && statistics.budgetBytes == 1 << 30, "\(statistics)")

        let one = cache.removeThumbnails(ofAssets: ["b/w.jpg"])
        #expect(one == CachePurge(entries: 2, bytes: 200, assetPaths: ["b/w.jpg"]))
        // The folder "a", not "a0" beside it; its failure record goes too.
        let folder = cache.purge(under: "a")
        #expect(folder.entries == 4 && folder.bytes == 400 && folder.assetPaths == ["a/x.jpg", "a/y.jpg", "a/broken.jpg"], "\(folder)")
        cache.index.reaper.waitUntilReaped()
        statistics = cache.index.detailedStatistics
        #expect(statistics.entries == 2 && statistics.bytes == 200 && statistics.assets == 1 && statistics.failures == 0, "\(statistics)")
        #expect(Set(DiskCacheFixture.files(in: fixture.directory).keys) == Set(cache.indexRowsForTesting().keys))
        #expect(cache.thumbnail(for: DiskCacheFixture.key("a0/z.jpg")) != nil)
        #expect(cache.thumbnail(for: DiskCacheFixture.key("a/x.jpg")) == nil)
        #expect(cache.purge(under: "nothing") == CachePurge())
    }

    @Test("a purge by kind takes that kind's thumbnails at every scale and crop-focus, and nothing of a kind of another shape or crop, even from a path that spells its marker")
    func purgeByKind() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [2, 3], mode: .fill, mask: .circle)
        var smart = avatar
        smart.name = "smart-avatar"
        smart.crop = .attention
        var focused = avatar
        focused.crop = .focus
        let grid = SlotKind(name: "grid", widthPoints: 120, heightPoints: 120)
        // An asset whose path holds the centre avatar's marker: its grid thumbnail is no avatar.
        let sly = "x" + CacheKey.kindMarker(avatar) + "2|y.jpg"
        func key(_ path: String, _ kind: SlotKind, scale: Int = 2, focus: FocusRegion? = nil) -> CacheKey {
            CacheKey(asset: DiskCacheFixture.version(path), kind: kind, scale: scale, encoder: EncoderSettings(), focus: focus)
        }
        let avatars = ["p/1.jpg", "p/2.jpg"].flatMap { [key($0, avatar, scale: 2), key($0, avatar, scale: 3)] }
        let others = [key("p/1.jpg", smart), key("p/1.jpg", grid), key(sly, grid), key("p/1.jpg", focused, focus: FocusRegion(x: 0.2, y: 0.3)),
                      key("p/2.jpg", focused)]
        for key in avatars + others { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100)) }

        // One scale first (contact-avatar@3x), then the rest.
        let atThree = cache.purge(kindMarker: CacheKey.kindMarker(avatar), scale: 3)
        #expect(atThree.entries == 2 && atThree.assetPaths == ["p/1.jpg", "p/2.jpg"], "\(atThree)")
        #expect(cache.thumbnail(for: avatars[0]) != nil && cache.thumbnail(for: avatars[1]) == nil)
        let purge = cache.purge(kindMarker: CacheKey.kindMarker(avatar))
        #expect(purge.entries == 2 && purge.bytes == 200 && purge.assetPaths == ["p/1.jpg", "p/2.jpg"], "\(purge)")
        for key in avatars { #expect(cache.thumbnail(for: key) == nil) }
        for key in others { #expect(cache.thumbnail(for: key) != nil, "\(key.descriptor)") }
        // A focus kind's thumbnails go whatever focus they were cropped around.
        let focusPurge = cache.purge(kindMarker: CacheKey.kindMarker(focused))
        #expect(focusPurge.entries == 2, "\(focusPurge)")
        #expect(cache.thumbnail(for: others[0]) != nil && cache.thumbnail(for: others[1]) != nil)
        cache.index.reaper.waitUntilReaped()
        #expect(Set(DiskCacheFixture.files(in: fixture.directory).keys) == Set(cache.indexRowsForTesting().keys))
        #expect(cache.index.detailedStatistics.entries == 3)
    }

    @Test("finding 3: a purge by kind walks the index in batches, one short hold of the lock each, and takes exactly what one walk would")
    func purgeByKindInBatches() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
        let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [2, 3], mode: .fill, mask: .circle)
        let grid = SlotKind(name: "grid", widthPoints: 120, heightPoints: 120)
        func key(_ path: String, _ kind: SlotKind) -> CacheKey {
            CacheKey(asset: DiskCacheFixture.version(path), kind: kind, scale: 2, encoder: EncoderSettings())
        }
        let avatars = (0..<5).map { key("b/\($0).jpg", avatar) }
        let grids = (0..<6).map { key("b/\($0).jpg", grid) }
        for key in avatars + grids { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 10)) }

        let before = cache.index.removalTransactions
        // Two rows a hold: five avatars cannot go in fewer than three transactions.
        let purge = cache.purge(kindMarker: CacheKey.kindMarker(avatar), batchRows: 2)
        #expect(purge.entries == 5 && purge.bytes == 50 && purge.assetPaths == Set((0..<5).map { ExactPath("b/\($0).jpg") }), "\(purge)")
        #expect(cache.index.removalTransactions - before >= 3)
        for key in avatars { #expect(cache.thumbnail(for: key) == nil) }
        for key in grids { #expect(cache.thumbnail(for: key) != nil) }
        #expect(cache.index.detailedStatistics.entries == 6)
        // A batch as wide as the index and one row a batch agree on the rest.
        #expect(cache.purge(kindMarker: CacheKey.kindMarker(grid), batchRows: 1).entries == 6)
        #expect(cache.index.detailedStatistics.entries == 0)
    }

    @Test("verify on a cache whose files and index disagree: says what it found, mends it, and finds nothing the second time")
    func verifyMendsDisagreement() throws {
        let keys = (0..<5).map { DiskCacheFixture.key("v/\($0).jpg") }
        let stray: String
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30)
            for key in keys { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 300)) }
            cache.close()
            // Behind the index's back: one file gone, one cut short, one file no row names.
            let rows = keys.map { cache.filePath(for: $0, format: .jpeg) }
            try FileManager.default.removeItem(atPath: rows[0])
            try Data(repeating: 7, count: 10).write(to: URL(fileURLWithPath: rows[1]))
            stray = (rows[2] as NSString).deletingLastPathComponent + "/0123456789abcdef0123456789abcdef.png"
            try Data(repeating: 1, count: 77).write(to: URL(fileURLWithPath: stray))
        }
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 30, reconcilesFiles: false)
        let found = try #require(cache.index.verify())
        #expect(found.rowsRemoved == 2, "\(found)")
        #expect(found.filesRemoved >= 1 && found.fileBytesRemoved >= 77, "\(found)")
        #expect(found.entries == 3 && found.bytes == 900, "\(found)")
        #expect(!FileManager.default.fileExists(atPath: stray))
        for key in keys.dropFirst(2) { #expect(cache.thumbnail(for: key)?.bytes.count == 300) }
        #expect(cache.thumbnail(for: keys[1]) == nil, "a file of another size is no thumbnail")
        let again = try #require(cache.index.verify())
        #expect(again == CacheVerification(entries: 3, bytes: 900), "\(again)")
    }
}
