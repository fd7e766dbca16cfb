import Foundation
import Testing
import ThumbTestSupport
import ThumbPipeline

/// Issue 11 item 8: `thumbd batch` ignored `cache.diskBytes` (it built its pipeline without it,
/// so every batch cache had the 2 GiB default). A batch of more thumbnails than the budget must
/// leave the cache within it, and say that it evicted some of its own.
@Suite struct BatchDiskBudgetTests {
    static let budgetBytes = 1 << 20  // the smallest budget the config takes

    @Test func aBatchLargerThanTheBudgetLeavesTheCacheWithinIt() throws {
        let scratch = try ScratchDirectory("batch-disk-budget")
        let assets = scratch.path("assets")
        let names = try Batch.copyLargeJPEGs(into: assets, scratch: scratch, count: 12)
        let config = scratch.path("thumbd.json")
        try scratch.write(#"""
            {"kinds": {"x-large": {"width": 512, "height": 512, "mode": "fit"}, "xx-large": {"width": 1024, "height": 1024, "mode": "fit"}},
             "cache": {"diskBytes": \#(Self.budgetBytes)}}
            """#, to: config)
        let cache = scratch.path("cache")
        let result = try Batch.run([assets, "--config", config, "--cache", cache, "--kinds", "x-large,xx-large", "--json"],
                                   scratch: scratch, timeout: 300)
        #expect(result.exitCode == 0, result.describe)
        let summary = try #require(result.summary, result.describe)
        #expect(summary.rendered == names.count * 2 && summary.failures.isEmpty, result.describe)

        // What the batch rendered is larger than the budget; what the cache kept is within it.
        let files = Self.thumbnailFiles(in: cache)
        let kept = files.values.reduce(0, +)
        #expect(files.count < summary.rendered, "the cache kept all \(files.count) thumbnails: \(kept) bytes")
        #expect(kept <= Self.budgetBytes, "\(kept) bytes of thumbnails in a cache of \(Self.budgetBytes)")
        #expect(kept > Self.budgetBytes / 2, "the budget is used, not merely undershot: \(kept) bytes")
        let index = try ThumbnailStore(directory: cache, byteBudget: Self.budgetBytes)
        #expect(index.statistics.entries == files.count && index.statistics.bytes == kept)
        index.close()
        #expect(result.stderr.contains("the cache keeps \(files.count) of the \(summary.rendered) thumbnails rendered"), result.describe)
        #expect(result.stderr.contains("cache.diskBytes is \(Self.budgetBytes)"), result.describe)
    }

    /// Thumbnail files of a cache folder (its two-hex-digit shards): name → bytes.
    static func thumbnailFiles(in cache: String) -> [String: Int] {
        var files: [String: Int] = [:]
        for shard in Batch.names(cache) where shard.utf8.count == 2 {
            for name in Batch.names(cache + "/" + shard) where !name.contains(".tmp") {
                let attributes = try? FileManager.default.attributesOfItem(atPath: cache + "/" + shard + "/" + name)
                files[shard + "/" + name] = (attributes?[.size] as? NSNumber)?.intValue ?? 0
            }
        }
        return files
    }
}
