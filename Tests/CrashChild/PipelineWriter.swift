import Foundation
import ThumbImaging
import ThumbPipeline

/// Renders every asset at 40 kinds, over and over, into a small disk cache (so eviction runs too).
struct PipelineWriter {
    /// The crash test asks for the same kinds (`PipelineCrashTests.kinds`).
    static let kinds: [SlotKind] = (1...40).map { (step: Int) -> SlotKind in
        let width = Double(40 + 7 * step), height = Double(40 + 5 * step)
        return SlotKind(name: "k\(step)", widthPoints: width, heightPoints: height, mode: .fill)
    }
    static let scale = 2
    static let diskCacheBytes = 400_000

    let root: String

    func run() async {
        var configuration = PipelineConfiguration(assetRoot: root + "/assets", cacheDirectory: root + "/cache")
        configuration.workers = 2
        configuration.diskCacheBytes = Self.diskCacheBytes
        let pipeline: ThumbnailPipeline
        do {
            pipeline = try ThumbnailPipeline(configuration: configuration)
        } catch {
            CrashChild.fail(70, "cannot start the pipeline on \(root): \(error)")
        }
        let assets = ((try? FileManager.default.contentsOfDirectory(atPath: root + "/assets")) ?? []).sorted().filter { name in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/assets/" + name, isDirectory: &isFolder) && !isFolder.boolValue
        }
        // One thumbnail rendered and indexed before the parent may kill us: the index it then
        // reopens can never rightly be empty. (Some assets are broken on purpose.)
        var indexed = false
        for asset in assets where !indexed {
            let answer = await pipeline.thumbnail(PipelineRequest(assetPath: asset, kind: Self.kinds[0], scale: Self.scale))
            if case .success = answer.result { indexed = true }
        }
        guard indexed else { CrashChild.fail(70, "no asset in \(root)/assets renders") }
        CrashChild.markReady(root + "/ready")
        let deadline = ContinuousClock.now + .seconds(CrashChild.lifetimeSeconds)
        while ContinuousClock.now < deadline {
            for kind in Self.kinds {
                for asset in assets { pipeline.prerender(assetPath: asset, kind: kind, scale: Self.scale) }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
