import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// The one failure table (`ThumbFailure.disposition`): a failure remembered in the disk cache
/// comes back as the same failure, and an index of the previous schema keeps its thumbnails.
/// (The table's rules for every case, in HTTP statuses, are `FailureStatusTests` of ThumbServer.)
@Suite("failure table")
struct FailureTableTests {
    @Test("a negative record answers as the failure that wrote it")
    func recordsRoundTrip() {
        for record in NegativeRecord.allCases {
            let failure = record.failure(reason: "why")
            #expect(failure.disposition.negativeRecord == record)
            #expect(failure.reason == "why")
        }
    }

    @Test("corpus files that must fail: the render's failure and the remembered one after a restart are the same")
    func rememberedFailureMatchesTheRender() async throws {
        let fixture = try PipelineFixture()
        let broken = try Self.brokenCorpusFiles(count: 6)
        for (index, file) in broken.enumerated() {
            try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/" + file,
                                             toPath: fixture.assets + "/bad\(index)." + (file.hasSuffix(".png") ? "png" : "jpg"))
        }
        let names = broken.indices.map { "bad\($0)." + (broken[$0].hasSuffix(".png") ? "png" : "jpg") } + ["broken.jpg"]
        var first: [String: ThumbFailure] = [:]
        do {
            let pipeline = try fixture.pipeline()
            let log = AnswerLog()
            for name in names {
                pipeline.submit(PipelineRequest(assetPath: name, kind: PipelineFixture.large, scale: 1), completion: log.completion(name))
            }
            await log.wait(for: names.count)
            for name in names { first[name] = try #require(log.response(name)?.error, "\(name) rendered") }
            pipeline.shutdown()
        }
        let pipeline = try fixture.pipeline()
        defer { pipeline.shutdown() }
        let log = AnswerLog()
        for name in names {
            pipeline.submit(PipelineRequest(assetPath: name, kind: PipelineFixture.large, scale: 1), completion: log.completion(name))
        }
        await log.wait(for: names.count)
        #expect(pipeline.metrics.negativeHits == names.count)
        for name in names {
            let rendered = try #require(first[name])
            #expect(rendered.disposition.negativeRecord != nil, "\(name): \(rendered)")
            #expect(log.response(name)?.error == rendered, "\(name)")
        }
    }

    @Test("an index of schema 1 keeps its thumbnails and drops only its negative entries")
    func schemaOneIsUpgraded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("index-v1-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let version = AssetVersion(path: "a.jpg", size: 10, modifiedNanoseconds: 1, inode: 2, device: 3)
        let key = CacheKey(asset: version, kind: PipelineFixture.large, scale: 1, encoder: EncoderSettings())
        do {
            let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
            try cache.insert(CachedThumbnail(key: key, bytes: [1, 2, 3], filePath: cache.filePath(for: key, format: .png),
                                             format: .png, width: 1, height: 1))
            cache.close()
        }
        // Turn the failures table back into schema 1's.
        let database = try SQLiteDatabase(path: directory + "/" + CacheIndex.indexName)
        try database.exec("""
            DROP TABLE failures;
            CREATE TABLE failures (asset_path TEXT PRIMARY KEY NOT NULL, version TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT NOT NULL);
            INSERT INTO failures VALUES ('b.jpg', 'v', 'undecodable', 'old');
            PRAGMA user_version = 1;
            """)
        database.close()
        let cache = try ThumbnailStore(directory: directory, byteBudget: 1 << 20)
        defer { cache.close() }
        #expect(cache.thumbnail(for: key)?.bytes == [1, 2, 3])
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + CacheIndex.indexName + ".broken"))
        cache.failures.recordFailure(version, record: .tooLarge, reason: "pixels")
        #expect(cache.failures.failure(for: version) == .tooLarge(reason: "pixels"))
    }

    /// Corpus files the manifest says must fail, half JPEG and half PNG.
    static func brokenCorpusFiles(count: Int) throws -> [String] {
        // 12-bit JPEGs may decode where libjpeg-turbo is built for them: not a must-fail here.
        // A HEIC under a .jpg name is an ERROR row of that manifest (of JPEG decoders) that thumbd reads by content.
        let failing = try CorpusManifest.jpegAndPNG()
            .filter { $0.status == "ERROR" && !$0.detail.contains("precision 12") && !$0.detail.contains("0xc3") }
            .map(\.relativePath)
            .filter { (try? SourceBytes.read(path: PipelineFixture.corpus + "/" + $0, maxBytes: 1 << 24))?.format.map { [.jpeg, .png].contains($0) } ?? true }
        try #require(failing.count >= count)
        return Array(failing.filter { $0.hasSuffix(".jpg") }.prefix(count / 2) + failing.filter { $0.hasSuffix(".png") }.prefix(count / 2))
    }
}
