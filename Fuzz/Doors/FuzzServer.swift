import Foundation
import ThumbPipeline
import ThumbServer

/// A pipeline and API over an empty asset root in a scratch folder: every thumbnail request
/// runs the route, kind, query and slot rules and ends at "no such asset", so nothing renders
/// and every answer is synchronous. `maxWaitMilliseconds: 0` answers a queued job at once.
enum FuzzServer {
    static let folder: String = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-fuzz-\(ProcessInfo.processInfo.processIdentifier)").path
        for name in ["assets", "cache"] {
            try? FileManager.default.createDirectory(atPath: folder + "/" + name, withIntermediateDirectories: true)
        }
        atexit { try? FileManager.default.removeItem(atPath: FuzzServer.folder) }
        return folder
    }()

    /// Runs `body` with a fresh pipeline (empty slot table and queue), shut down afterwards.
    static func withAPI(_ body: (ThumbnailAPI) -> Void) {
        var configuration = PipelineConfiguration(assetRoot: folder + "/assets", cacheDirectory: folder + "/cache")
        configuration.workers = 1
        configuration.memoryCacheBytes = 1 << 20
        let pipeline: ThumbnailPipeline
        do {
            pipeline = try ThumbnailPipeline(configuration: configuration)
        } catch {
            fatalError("cannot open the fuzz pipeline in \(folder): \(error)")
        }
        body(ThumbnailAPI(pipeline: pipeline, catalog: FuzzCatalog.catalog, maxWaitMilliseconds: 0))
        pipeline.shutdown()
    }
}
