import Foundation
import Testing
import ThumbImaging
@testable import ThumbPipeline
import ThumbSystem

/// Attention placements in the index (schema 5's `placeholders.placements`) and through the
/// pipeline: the render that places a version's crop stores where, and later renders of that
/// version crop there without placing it again.
@Suite struct PlacementIndexTests {
    static let placeholder = Placeholder(thumbHash: [1, 2, 3, 4, 5, 6], averageRed: 1, averageGreen: 2, averageBlue: 3, averageAlpha: 255)

    static func placement(_ shape: String, _ x: Double, _ y: Double) -> AttentionPlacement {
        AttentionPlacement(shape: shape, centre: FocusRegion(x: x, y: y)!)
    }

    @Test("the text form round-trips, and a damaged entry is skipped rather than trusted")
    func textForm() {
        let placements = [Self.placement("144x144c", 0.3125, 0.1), Self.placement("60x180r120", 1, 0)]
        #expect(PlaceholderStore.placements(text: PlaceholderStore.placementsText(placements)) == placements)
        #expect(PlaceholderStore.placements(text: "") == [] && PlaceholderStore.placements(text: ";;") == [])
        let damaged = "96x96c 0.5 nan;96x96 1.5 0.5;a b;\(String(repeating: "x", count: 41)) 0.5 0.5;96x96c 0.5;"
            + "144x144c 0.25 0.75;144x144c 0.5 0.5"
        #expect(PlaceholderStore.placements(text: damaged) == [Self.placement("144x144c", 0.25, 0.75)])
    }

    @Test("stored with the placeholder, added to the row of exactly its version, gone when another version is decoded")
    func storedPerVersion() throws {
        let fixture = try DiskCacheFixture()
        let version = DiskCacheFixture.version("a.jpg")
        let edited = DiskCacheFixture.version("a.jpg", modified: 1_800_000_000_000_000_000)
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        cache.placeholders.addPlacements([Self.placement("96x96c", 0.5, 0.5)], of: version)
        #expect(cache.placeholders.stored(ofAssets: ["a.jpg"]).isEmpty, "no row before the version's first decode")
        cache.placeholders.store(Self.placeholder, placements: [Self.placement("144x144c", 0.25, 0.5)], of: version)
        cache.placeholders.addPlacements([Self.placement("96x96c", 0.5, 0.5), Self.placement("144x144c", 0.9, 0.9)], of: version)
        cache.placeholders.addPlacements([Self.placement("60x60", 0.1, 0.1)], of: edited)
        #expect(cache.placeholders.stored(ofAssets: ["a.jpg"])["a.jpg"]?.placements
                == [Self.placement("144x144c", 0.25, 0.5), Self.placement("96x96c", 0.5, 0.5)],
                "a shape already placed keeps its place; another version's placements are not added")
        // A second decode of the same version (one that raced the first) adds to the row, never drops.
        cache.placeholders.store(Self.placeholder, placements: [Self.placement("60x60", 0.1, 0.1), Self.placement("96x96c", 0, 0)], of: version)
        #expect(cache.placeholders.stored(ofAssets: ["a.jpg"])["a.jpg"]?.placements.map(\.shape) == ["144x144c", "96x96c", "60x60"])
        cache.placeholders.store(Self.placeholder, of: edited)
        #expect(cache.placeholders.stored(ofAssets: ["a.jpg"])["a.jpg"]?.placements == [])
    }

    @Test("an index of schema 4 opens as 6 with its placeholders kept (also one relabelled 4 that has the column)",
          arguments: [true, false])
    func schema4Upgrade(dropsColumn: Bool) throws {
        let fixture = try DiskCacheFixture()
        let version = DiskCacheFixture.version("a.jpg")
        do {
            let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
            cache.placeholders.store(Self.placeholder, of: version)
            try cache.executeForTesting((dropsColumn ? "ALTER TABLE placeholders DROP COLUMN placements; " : "") + "PRAGMA user_version = 4;")
            cache.close()
        }
        let cache = try ThumbnailStore(directory: fixture.directory, byteBudget: 1 << 20)
        defer { cache.close() }
        #expect(try cache.scalarForTesting("PRAGMA user_version") == 6)
        #expect(cache.placeholders.placeholder(of: version) == Self.placeholder)
        cache.placeholders.addPlacements([Self.placement("96x96c", 0.5, 0.5)], of: version)
        #expect(cache.placeholders.stored(ofAssets: ["a.jpg"])["a.jpg"]?.placements == [Self.placement("96x96c", 0.5, 0.5)])
    }
}

/// The pipeline's side, in process (the worker carries the same values: `WorkerProtocolTests`).
@Suite struct PipelinePlacementTests {
    let fixture: PipelineFixture
    init() throws { fixture = try PipelineFixture() }

    static let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [2, 3], mode: .fill, mask: .circle,
                                 crop: .attention)

    func loadAsset(_ name: String) throws -> SourceBytes {
        try SourceBytes.read(path: fixture.assets + "/" + name, maxBytes: 1 << 30)
    }

    @Test("a version's attention render stores its placement; the next render of that shape crops where the index says")
    func laterRendersUseTheStoredPlace() async throws {
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let asset = "img0.jpg" // Landscape_1.jpg, 1800x1200: a square crop has room to move
        let first = try await pipeline.thumbnail(.init(assetPath: asset, kind: Self.avatar, scale: 3, format: .jpeg)).result.get()
        let version = try pipeline.assets.resolve(asset).version
        let row = try #require(pipeline.stores.placeholders.stored(ofAssets: [asset])[ExactPath(asset)])
        let placement = try #require(row.placements.first)
        #expect(row.placements.count == 1 && placement.shape == "a1:144x144c")
        let crop = try #require(first.crop)
        let shown = Double(try Thumbnailer().render(loadAsset(asset), request: ThumbnailRequest(kind: Self.avatar, scale: 3)).sourceWidth)
        #expect(abs((crop.x + crop.width / 2) / shown - placement.centre.x) < 1e-9)
        // The index now says the crop's centre is at the left edge: a render that reads the index
        // crops there; one that placed the crop again would put it where attention did.
        PlaceholderStore(index: pipeline.stores.index).removeForTesting(of: asset) // a row of the same version keeps its placements
        pipeline.stores.placeholders.store(row.placeholder, placements: [PlacementIndexTests.placement("a1:144x144c", 0, 0.5)], of: version)
        let second = try await pipeline.thumbnail(.init(assetPath: asset, kind: Self.avatar, scale: 3, format: .png)).result.get()
        #expect(second.crop?.x == 0 && second.crop?.width == crop.width, "\(String(describing: second.crop))")
        #expect(first.crop?.x != 0, "attention placed the crop at the left edge: the check above proves nothing")
        // Another shape (@2x) is placed by its own first render and added beside it.
        _ = try await pipeline.thumbnail(.init(assetPath: asset, kind: Self.avatar, scale: 2, format: .jpeg)).result.get()
        let shapes = pipeline.stores.placeholders.stored(ofAssets: [asset])[ExactPath(asset)]?.placements.map(\.shape)
        #expect(shapes == ["a1:144x144c", "a1:96x96c"])
        #expect(pipeline.metrics.placeholdersComputed == 1)
    }

    @Test("a pre-render places every configured attention shape at the version's first decode; a client's first request of one then crops there")
    func prerenderPlacesEveryShape() async throws {
        let pipeline = try fixture.pipeline { $0.attentionPlaced = [(Self.avatar, 2), (Self.avatar, 3)] }
        defer { pipeline.shutdown() }
        let asset = "img0.jpg"
        #expect(pipeline.prerender(assetPath: asset, kind: PipelineFixture.large, scale: 1, priority: .batch))
        var row: StoredPlaceholder?
        for _ in 0..<400 where row?.placements.count != 2 {
            try await Task.sleep(for: .milliseconds(25))
            row = pipeline.stores.placeholders.stored(ofAssets: [asset])[ExactPath(asset)]
        }
        let placements = try #require(row?.placements)
        #expect(Set(placements.map(\.shape)) == ["a1:144x144c", "a1:96x96c"], "\(placements)")
        // Only the pre-rendered kind was kept: the avatar's thumbnails were made to place, not to serve.
        #expect(pipeline.cacheStatistics.disk.entries == 1)
        // The first visible request of the avatar crops where the pre-render placed it.
        let version = try pipeline.assets.resolve(asset).version
        let placed = try #require(placements.first { $0.shape == "a1:144x144c" })
        PlaceholderStore(index: pipeline.stores.index).removeForTesting(of: asset)
        pipeline.stores.placeholders.store(try #require(row?.placeholder), placements: [PlacementIndexTests.placement("a1:144x144c", 0, 0.5)],
                                           of: version)
        let served = try await pipeline.thumbnail(.init(assetPath: asset, kind: Self.avatar, scale: 3, format: .jpeg)).result.get()
        #expect(served.crop?.x == 0, "the index's place, not a new one: \(String(describing: served.crop))")
        #expect(placed.centre.x > 0.05, "attention put the crop at the left edge: the check above proves nothing")
        // A decode a client waits on places nothing beside its own request.
        let other = "img5.jpg"
        _ = try await pipeline.thumbnail(.init(assetPath: other, kind: PipelineFixture.large, scale: 1)).result.get()
        #expect(pipeline.stores.placeholders.stored(ofAssets: [other])[ExactPath(other)]?.placements ?? [] == [])
    }
}
