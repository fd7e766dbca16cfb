import Foundation
import ThumbAccess
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

    /// The access model the doors meet: a signing key `k1` (secret 32 bytes of 0x11), signatures
    /// required on TCP, a bearer token `fuzz-token` of an operator, an allowed origin.
    static let access: AccessControl = {
        var settings = AccessSettings()
        settings.signingKeys = [.init(id: "k1", secret: .bytes([UInt8](repeating: 0x11, count: 32)))]
        settings.tcpSignatures = .required
        settings.tokens = [.init(name: "fuzz", role: .operator, sha256: .bytes(Digest.sha256(Array("fuzz-token".utf8))))]
        settings.allowedOrigins = ["https://app.example"]
        settings.users = ["nobody": .public]
        // Nothing to read: the settings have no files.
        return try! AccessControl(settings: settings, environment: [:], clock: { 1_800_000_000 })
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
        body(ThumbnailAPI(pipeline: pipeline, catalog: FuzzCatalog.catalog, maxWaitMilliseconds: 0, access: access))
        pipeline.shutdown()
    }
}
