import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// Issue 25: the asset listing the API pages (`GET /v1/assets`), kept in the index by the
/// reconciles and the watcher's events.
@Suite struct AssetListingTests {
    static func byteOrder(_ paths: [String]) -> [String] { paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

    @Test("pages in byte order: a prefix is one run, after is exclusive, limit bounded to 1000; removals by path and by folder")
    func pages() throws {
        let fixture = try DiskCacheFixture()
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        let listing = cache.listing
        let paths = ["b.jpg", "B.jpg", "a/1.jpg", "a b.jpg", "a.jpg", "a/sub/2.jpg", "ab.jpg", "é.jpg", "a0.jpg"]
        listing.add(paths)
        listing.add(["a.jpg"])  // already listed: stays once
        #expect(listing.count == paths.count)
        #expect(listing.page(prefix: "", after: "", limit: 100) == Self.byteOrder(paths))
        #expect(listing.page(prefix: "a/", after: "", limit: 100) == ["a/1.jpg", "a/sub/2.jpg"])
        #expect(listing.page(prefix: "a", after: "a.jpg", limit: 2) == ["a/1.jpg", "a/sub/2.jpg"])
        #expect(listing.page(prefix: "", after: "é.jpg", limit: 5).isEmpty)
        #expect(listing.page(prefix: "", after: "", limit: 0).isEmpty)
        listing.add((0..<1500).map { "many/\($0).jpg" })
        #expect(listing.page(prefix: "many/", after: "", limit: 5000).count == AssetListStore.maxPageLength)
        listing.remove(under: "many")
        listing.remove(["b.jpg", "not-listed.jpg"])
        listing.remove(under: "a/")
        #expect(listing.page(prefix: "", after: "", limit: 100) == Self.byteOrder(["B.jpg", "a b.jpg", "a.jpg", "ab.jpg", "é.jpg", "a0.jpg"]))
    }

    @Test("the start-up reconcile lists the folder; after an upgrade from schema 5 the next one fills the listing again and drops what went while the daemon was down (a path only the listing held)")
    func reconcileKeepsTheListing() throws {
        let fixture = try PipelineFixture()
        do {
            let pipeline = try fixture.pipeline()
            pipeline.reconcileInBackground()
            pipeline.waitForBackgroundReconcile()
            let listed = pipeline.listAssets(prefix: "", after: "", limit: 1000).map(\.path)
            #expect(listed == Self.byteOrder(fixture.imageNames + ["broken.jpg"]), "\(listed)")
            pipeline.shutdown()
        }
        // Down: the index taken back to schema 5 (no listing) and upgraded by the next open, which
        // starts the listing empty; then a path only the listing holds (no thumbnail, no failure)
        // whose file goes, and a file that comes.
        do {
            let cache = try ThumbnailStore(directory: fixture.cache, byteBudget: 1 << 30)
            try cache.executeForTesting("DROP TABLE assets; PRAGMA user_version = 5;")
            cache.close()
        }
        do {
            let cache = try ThumbnailStore(directory: fixture.cache, byteBudget: 1 << 30)
            #expect(try cache.scalarForTesting("PRAGMA user_version") == 6)
            #expect(cache.listing.count == 0, "the upgrade starts the listing empty")
            cache.listing.add(["img1.jpg"])
            #expect(try cache.scalarForTesting("SELECT count(*) FROM entries WHERE asset_path = 'img1.jpg'") == 0)
            cache.close()
        }
        try FileManager.default.removeItem(atPath: fixture.assets + "/img1.jpg")
        try FileManager.default.copyItem(atPath: fixture.assets + "/img0.jpg", toPath: fixture.assets + "/sub/added.jpg")
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        pipeline.reconcileInBackground()
        pipeline.waitForBackgroundReconcile()
        let expected = Self.byteOrder(fixture.imageNames.filter { $0 != "img1.jpg" } + ["broken.jpg", "sub/added.jpg"])
        #expect(pipeline.listAssets(prefix: "", after: "", limit: 1000).map(\.path) == expected)
    }

    @Test("schema 5 upgrades to 6: the listing table is made, everything else kept")
    func schema5Upgrade() throws {
        let fixture = try DiskCacheFixture()
        let key = DiskCacheFixture.key("a.jpg")
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            try cache.insert(DiskCacheFixture.thumbnail(cache, key, size: 100))
            try cache.executeForTesting("DROP TABLE assets; PRAGMA user_version = 5;")
            cache.close()
        }
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        #expect(try cache.scalarForTesting("PRAGMA user_version") == 6)
        #expect(cache.thumbnail(for: key) != nil)
        cache.listing.add(["a.jpg"])
        #expect(cache.listing.page(prefix: "", after: "", limit: 10) == ["a.jpg"])
    }
}
