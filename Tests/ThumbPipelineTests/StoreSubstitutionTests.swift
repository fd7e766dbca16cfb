import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// The cache folder's stores are injected by ability (`CacheStores`): a pipeline built with a
/// substituted store asks that store, and only that store, what the concern is about.
@Suite("substituted stores")
struct StoreSubstitutionTests {
    @Test("failures: a render's failure is recorded in the substituted store, and what it remembers answers without a render")
    func failuresComeFromTheSubstitutedStore() async throws {
        let fixture = try PipelineFixture()
        let failures = RememberedFailures()
        let pipeline = try ThumbnailPipeline(configuration: fixture.configuration(), startsWorkers: true,
                                             substitutingStores: { $0.failures = failures })
        defer { pipeline.shutdown() }
        let log = AnswerLog()

        pipeline.submit(PipelineRequest(assetPath: "broken.jpg", kind: PipelineFixture.large, scale: 1), completion: log.completion("first"))
        await log.wait(for: 1)
        let rendered = try #require(log.response("first")?.error)
        let recorded = failures.recorded
        try #require(recorded.count == 1, "one failure recorded, got \(recorded)")
        #expect(recorded[0].version.path == "broken.jpg")
        #expect(recorded[0].record.failure(reason: recorded[0].reason) == rendered)
        // The daemon's own failure table was not written: the store it replaced holds nothing.
        #expect(FailureStore(index: pipeline.stores.index).failure(for: recorded[0].version) == nil)
        let rendersAfterFirst = pipeline.metrics.renders

        // Another kind of the same broken file: answered from the substitute, not rendered.
        pipeline.submit(PipelineRequest(assetPath: "broken.jpg", kind: PipelineFixture.avatar, scale: 3), completion: log.completion("again"))
        await log.wait(for: 2)
        #expect(log.response("again")?.error == rendered)

        // A good image the substitute says cannot be rendered is refused as the substitute says.
        let good = try pipeline.assets.resolve("img0.jpg").version
        failures.remember(good, as: .tooLarge(reason: "remembered by the test"))
        pipeline.submit(PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1), completion: log.completion("good"))
        await log.wait(for: 3)
        #expect(log.response("good")?.error == .tooLarge(reason: "remembered by the test"))
        #expect(pipeline.metrics.renders == rendersAfterFirst)
        #expect(pipeline.metrics.negativeHits == 2)
        #expect(failures.lookUps >= 2)
    }

    @Test("focus: the key follows the substituted store's focus, and its failure to keep one is the API's index error")
    func focusComesFromTheSubstitutedStore() async throws {
        let fixture = try PipelineFixture()
        let focus = KeptFocus()
        let pipeline = try ThumbnailPipeline(configuration: fixture.configuration(), startsWorkers: true,
                                             substitutingStores: { $0.focus = focus })
        defer { pipeline.shutdown() }
        let kind = SlotKind(name: "focus-card", widthPoints: 60, heightPoints: 120, mode: .fill, crop: .focus)
        let region = try #require(FocusRegion(x: 0.9, y: 0.5))

        try pipeline.focus.set(region, ofAssetPath: "img0.jpg")
        #expect(focus.regions["img0.jpg"] == region)
        #expect(FocusStore(index: pipeline.stores.index).focus(ofAsset: "img0.jpg") == nil)
        let version = try pipeline.assets.resolve("img0.jpg").version
        #expect(pipeline.focus.cacheKey(asset: version, kind: kind, scale: 1, encoder: EncoderSettings()).focus == region)

        // The thumbnail is rendered around the substitute's focus, and stored under its key.
        let response = await pipeline.thumbnail(PipelineRequest(assetPath: "img0.jpg", kind: kind, scale: 1))
        let thumbnail = try #require(response.thumbnail, "\(String(describing: response.error))")
        #expect(thumbnail.key.focus == region)

        focus.refusal = CacheError(operation: "set focus", reason: "no space left on device", kind: .diskFull)
        #expect(throws: FocusError.index(focus.refusal!)) {
            try pipeline.focus.set(FocusRegion(x: 0.1, y: 0.1)!, ofAssetPath: "img0.jpg")
        }
        #expect(focus.regions["img0.jpg"] == region)
    }
}

/// Failures remembered in memory, with every call counted.
final class RememberedFailures: FailureRemembering {
    struct Recorded: Sendable {
        var version: AssetVersion
        var record: NegativeRecord
        var reason: String
    }

    private let state = Mutex<(recorded: [Recorded], remembered: [AssetVersion: ThumbFailure], lookUps: Int)>(([], [:], 0))

    var recorded: [Recorded] { state.withLock { $0.recorded } }
    var lookUps: Int { state.withLock { $0.lookUps } }

    func remember(_ version: AssetVersion, as failure: ThumbFailure) {
        state.withLock { $0.remembered[version] = failure }
    }

    func recordFailure(_ version: AssetVersion, record: NegativeRecord, reason: String) {
        state.withLock {
            $0.recorded.append(Recorded(version: version, record: record, reason: reason))
            $0.remembered[version] = record.failure(reason: reason)
        }
    }

    func failure(for version: AssetVersion) -> ThumbFailure? {
        state.withLock {
            $0.lookUps += 1
            return $0.remembered[version]
        }
    }
}

/// Focus regions kept in memory; `refusal`, when set, is thrown by every change.
final class KeptFocus: FocusKeeping {
    private let state = Mutex<(regions: [String: FocusRegion], refusal: CacheError?)>(([:], nil))

    var regions: [String: FocusRegion] { state.withLock { $0.regions } }
    var refusal: CacheError? {
        get { state.withLock { $0.refusal } }
        set { state.withLock { $0.refusal = newValue } }
    }

    func focus(ofAsset assetPath: String) -> FocusRegion? { state.withLock { $0.regions[assetPath] } }

    func setFocus(_ focus: FocusRegion, ofAsset assetPath: String) throws(CacheError) -> Int {
        try state.withLock { state throws(CacheError) -> Int in
            if let refusal = state.refusal { throw refusal }
            state.regions[assetPath] = focus
            return 0
        }
    }

    func removeFocus(ofAsset assetPath: String) throws(CacheError) -> Bool {
        try state.withLock { state throws(CacheError) -> Bool in
            if let refusal = state.refusal { throw refusal }
            return state.regions.removeValue(forKey: assetPath) != nil
        }
    }

    func removeFocus(ofAssets assetPaths: [String]) {
        state.withLock { for path in assetPaths { $0.regions[path] = nil } }
    }

    func removeFocus(under folder: String) {
        state.withLock { $0.regions = $0.regions.filter { !$0.key.hasPrefix(folder + "/") } }
    }

    func assetPathsWithFocus() -> [String] { state.withLock { Array($0.regions.keys) } }
}
