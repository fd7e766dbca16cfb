import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Issue 26: a kind changed from still to keep must not be answered with its old stills.
@Suite("Animation in cache keys")
struct AnimationCacheKeyTests {
    static let version = AssetVersion(path: "a.gif", size: 1, modifiedNanoseconds: 1, inode: 1, device: 1)

    static func key(_ animation: SlotKind.Animation) -> CacheKey {
        var webp = EncoderSettings()
        webp.format = .webp
        return CacheKey(asset: version, kind: SlotKind(name: "k", widthPoints: 80, heightPoints: 60, animation: animation),
                        scale: 1, encoder: webp)
    }

    @Test func keepIsKeyedApartAndStillKeepsItsKey() {
        #expect(Self.key(.keep).digest != Self.key(.still).digest)
        #expect(!Self.key(.still).descriptor.contains("anim"))
        #expect(Self.key(.keep).descriptor.contains(CacheKey.kindMarker(SlotKind(name: "k", widthPoints: 80, heightPoints: 60,
                                                                                 animation: .keep))))
    }
}
