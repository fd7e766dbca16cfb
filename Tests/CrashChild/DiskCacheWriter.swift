import Foundation
import ThumbImaging
import ThumbPipeline

/// Random inserts (both formats, 1–6,000 bytes), reads, failure records and removals over 120
/// keys in a 48,000-byte cache, as fast as it goes.
struct DiskCacheWriter {
    static let byteBudget = 48_000

    let directory: String

    /// The key of entry `number` (also `DiskCacheFixture.key("crash/N.jpg", width: 100 + N % 3)`).
    static func key(_ number: Int) -> CacheKey {
        let path = "crash/\(number).jpg"
        let width = Double(100 + number % 3)
        return CacheKey(asset: version(path), kind: SlotKind(name: "grid", widthPoints: width, heightPoints: width),
                        scale: 1, encoder: EncoderSettings())
    }

    static func version(_ path: String) -> AssetVersion {
        AssetVersion(path: path, size: 1234, modifiedNanoseconds: 1_700_000_000_000_000_000, inode: 42, device: 7)
    }

    /// Recognisable bytes for a digest and size; the crash test checks every indexed file against
    /// them (the same function as `DiskCacheFixture.bytes`).
    static func bytes(_ digest: String, count: Int) -> [UInt8] {
        var seed: UInt64 = 1469598103934665603
        for byte in digest.utf8 { seed = (seed ^ UInt64(byte)) &* 1099511628211 }
        return (0..<count).map { UInt8(truncatingIfNeeded: (seed >> UInt64($0 % 56)) &+ UInt64($0) &* 31) }
    }

    func insert(_ cache: ThumbnailStore, _ key: CacheKey, size: Int, format: ImageFormat) throws {
        try cache.insert(CachedThumbnail(key: key, bytes: Self.bytes(key.digest, count: size),
                                         filePath: cache.filePath(for: key, format: format), format: format, width: 120, height: 90))
    }

    func run() {
        let cache: ThumbnailStore
        do {
            cache = try ThumbnailStore(directory: directory, byteBudget: Self.byteBudget)
            try insert(cache, Self.key(0), size: 1000, format: .jpeg)
        } catch {
            CrashChild.fail(70, "cannot open or write the cache \(directory): \(error)")
        }
        CrashChild.markReady(directory + ".ready")
        var random = SystemRandomNumberGenerator()
        let deadline = Date().addingTimeInterval(Double(CrashChild.lifetimeSeconds))
        while Date() < deadline {
            let number = Int.random(in: 0..<120, using: &random)
            let key = Self.key(number)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let format: ImageFormat = Bool.random(using: &random) ? .jpeg : .png
                try? insert(cache, key, size: Int.random(in: 1...6000, using: &random), format: format)
            case 6, 7:
                _ = cache.thumbnail(for: key)
            case 8:
                FailureStore(index: cache.index).recordFailure(Self.version(key.assetPath), record: .undecodable, reason: "test")
            default:
                cache.removeThumbnails(ofAsset: key.assetPath)
            }
        }
    }
}
