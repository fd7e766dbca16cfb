import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline

extension ThumbnailStore {
    /// The first column of the first row, for the schema checks below.
    func scalarForTesting(_ sql: String) throws -> Int64? {
        try index.state.withLock { state in
            guard let database = state.database else { throw CacheError(operation: "test", reason: "closed") }
            return try database.scalar(sql)
        }
    }
}

/// Issue 12, focal points in the index and the keys: `DiskCache+Focus`, `CacheKey`'s crop part,
/// `entries.crop`, and the upgrade from schema 3.
@Suite struct FocusIndexTests {
    let fixture: DiskCacheFixture
    init() throws { fixture = try DiskCacheFixture() }

    static func kind(_ crop: SlotKind.CropMode, mode: SlotKind.ContentMode = .fill) -> SlotKind {
        SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: mode, mask: .circle, crop: crop)
    }

    static func key(_ path: String, _ crop: SlotKind.CropMode, focus: FocusRegion? = nil) -> CacheKey {
        CacheKey(asset: DiskCacheFixture.version(path), kind: kind(crop), scale: 3, encoder: EncoderSettings(), focus: focus)
    }

    static let focus = FocusRegion(x: 0.7, y: 0.2, width: 0.1, height: 0.1)!

    @Test("keys: centre keys as before crop modes (no crop part, focus ignored); attention and focus keyed apart")
    func keys() {
        let centre = Self.key("a.jpg", .centre)
        #expect(!centre.descriptor.contains("crop"), "\(centre.descriptor)")
        #expect(Self.key("a.jpg", .centre, focus: Self.focus) == centre)
        #expect(Self.key("a.jpg", .centre, focus: Self.focus).focus == nil)
        // A kind built in code with a crop but mode fit has no crop to move.
        let fit = CacheKey(asset: DiskCacheFixture.version("a.jpg"), kind: Self.kind(.focus, mode: .fit), scale: 3,
                           encoder: EncoderSettings(), focus: Self.focus)
        let plainFit = CacheKey(asset: DiskCacheFixture.version("a.jpg"), kind: Self.kind(.centre, mode: .fit), scale: 3, encoder: EncoderSettings())
        #expect(fit.descriptor == plainFit.descriptor && fit.focus == nil)
        let attention = Self.key("a.jpg", .attention)
        #expect(attention != centre && attention.descriptor.contains("|crop=attention"))
        #expect(Self.key("a.jpg", .attention, focus: Self.focus) == attention, "attention ignores any focus")
        let none = Self.key("a.jpg", .focus)
        let focused = Self.key("a.jpg", .focus, focus: Self.focus)
        let other = Self.key("a.jpg", .focus, focus: FocusRegion(x: 0.1, y: 0.2)!)
        #expect(Set([none.digest, focused.digest, other.digest, attention.digest, centre.digest]).count == 5)
        #expect(focused.focus == Self.focus && none.focus == nil)
        #expect(focused.descriptor.contains(CacheKey.focusCropMarker + Self.focus.description), "\(focused.descriptor)")
    }

    @Test("a focus is set, read, replaced and removed; kept across a reopen")
    func setGetRemove() throws {
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            #expect(cache.focus.focus(ofAsset: "a.jpg") == nil)
            try cache.focus.setFocus(FocusRegion(x: 0.5, y: 0.5)!, ofAsset: "a.jpg")
            try cache.focus.setFocus(Self.focus, ofAsset: "a.jpg")
            try cache.focus.setFocus(FocusRegion(x: 0.1, y: 0.9)!, ofAsset: "b/c.jpg")
            #expect(cache.focus.focus(ofAsset: "a.jpg") == Self.focus && cache.focus.count == 2)
            #expect(try cache.focus.removeFocus(ofAsset: "b/c.jpg"))
            #expect(try !cache.focus.removeFocus(ofAsset: "b/c.jpg"), "nothing left to remove")
            cache.close()
        }
        let reopened = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        #expect(reopened.focus.focus(ofAsset: "a.jpg") == Self.focus, "the exact doubles come back")
        #expect(reopened.focus.focus(ofAsset: "b/c.jpg") == nil && reopened.focus.count == 1)
    }

    @Test("setting or removing a focus drops that asset's focus-cropped rows and files, nothing else")
    func setDropsFocusRows() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        let kept = [Self.key("a.jpg", .centre), Self.key("a.jpg", .attention), Self.key("b.jpg", .focus)]
        let dropped = Self.key("a.jpg", .focus)
        for key in kept + [dropped] { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100)) }
        #expect(try cache.focus.setFocus(Self.focus, ofAsset: "a.jpg") == 1)
        #expect(cache.thumbnail(for: dropped) == nil && !cache.contains(dropped))
        #expect(kept.allSatisfy { cache.contains($0) })
        #expect(cache.statistics == (bytes: 300, entries: 3))
        let focused = Self.key("a.jpg", .focus, focus: Self.focus)
        try cache.insert(DiskCacheFixture.thumbnail(cache, focused, size: 50))
        #expect(try cache.focus.removeFocus(ofAsset: "a.jpg"))
        #expect(!cache.contains(focused) && cache.statistics == (bytes: 300, entries: 3))
        cache.index.reaper.waitUntilReaped()
        #expect(!FileManager.default.fileExists(atPath: cache.filePath(for: focused, format: .jpeg)))
    }

    @Test("removed assets and folders lose their focus; a sibling folder's name does not")
    func removals() throws {
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        for path in ["a.jpg", "b.jpg", "dir/x.jpg", "dir/deep/y.jpg", "dir0/z.jpg", "dir.jpg"] {
            try cache.focus.setFocus(Self.focus, ofAsset: path)
        }
        cache.focus.removeFocus(ofAssets: ["a.jpg", "never-had-one.jpg"])
        cache.focus.removeFocus(under: "dir")
        #expect(cache.focus.assetPathsWithFocus() == ["b.jpg", "dir.jpg", "dir0/z.jpg"])
        cache.close()
        let reopened = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        #expect(reopened.focus.assetPathsWithFocus() == ["b.jpg", "dir.jpg", "dir0/z.jpg"], "the rows went, not only the mirror's")
    }

    @Test("a thumbnail's crop rectangle is kept in the index")
    func cropKept() throws {
        let crop = CropRectangle(x: 412.5, y: 0, width: 1200, height: 1200)
        let key = Self.key("a.jpg", .attention)
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            var thumbnail = DiskCacheFixture.thumbnail(cache, key, size: 100)
            thumbnail.crop = crop
            try cache.insert(thumbnail)
            cache.close()
        }
        let reopened = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        #expect(reopened.thumbnail(for: key)?.crop == crop)
    }

    @Test("an index of schema 3 opens as 6: its thumbnails kept (crop unknown), focus and placeholders usable")
    func schema3Upgrade() throws {
        let keys = ["a.jpg", "b.jpg"].map { DiskCacheFixture.key($0) }
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            for key in keys { try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100)) }
            // Back to schema 3's DDL: no placeholders or focus tables, no entries.crop.
            try cache.executeForTesting("""
                DROP TABLE placeholders; DROP TABLE focus; ALTER TABLE entries DROP COLUMN crop; PRAGMA user_version = 3;
                """)
            #expect(try cache.scalarForTesting("SELECT count(*) FROM pragma_table_info('entries') WHERE name = 'crop'") == 0)
            cache.close()
        }
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        #expect(try cache.scalarForTesting("PRAGMA user_version") == 6)
        #expect(cache.statistics == (bytes: 200, entries: 2))
        for key in keys {
            let thumbnail = try #require(cache.thumbnail(for: key), "\(key.assetPath) lost in the upgrade")
            #expect(thumbnail.crop == nil && thumbnail.bytes == DiskCacheFixture.bytes(key.digest, count: 100))
        }
        try cache.focus.setFocus(Self.focus, ofAsset: "a.jpg")
        #expect(cache.focus.focus(ofAsset: "a.jpg") == Self.focus)
        #expect(try cache.scalarForTesting("SELECT count(*) FROM placeholders") == 0)
    }
}
