import Foundation
import Synchronization
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbPipeline

/// A pipeline over a temporary asset folder filled with small corpus images.
final class PipelineFixture: @unchecked Sendable {
    static let corpus = TestPaths.corpus
    /// Small real images of both formats.
    static let sources = [
        "exif-orientation/Landscape_1.jpg", "exif-orientation/Portrait_6.jpg", "pngsuite/basn2c08.png",
        "pngsuite/basn6a08.png", "libjpeg-turbo-testimages/testorig.jpg", "exif-samples/Canon_40D.jpg",
    ]
    static let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: .fill, mask: .circle)
    static let large = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)

    let root: String
    let assets: String
    let cache: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString)").path
        assets = root + "/assets"
        cache = root + "/cache"
        try FileManager.default.createDirectory(atPath: assets + "/sub", withIntermediateDirectories: true)
        for (index, source) in Self.sources.enumerated() {
            let name = "img\(index)." + (source.hasSuffix(".png") ? "png" : "jpg")
            try FileManager.default.copyItem(atPath: Self.corpus + "/" + source, toPath: assets + "/" + name)
        }
        try Data("this is not an image".utf8).write(to: URL(fileURLWithPath: assets + "/broken.jpg"))
    }

    /// A fixture over a folder another process made (the crash test's child); not removed.
    init(existingRoot: String) {
        root = existingRoot
        assets = existingRoot + "/assets"
        cache = existingRoot + "/cache"
        ownsRoot = false
    }

    private var ownsRoot = true

    deinit { if ownsRoot { try? FileManager.default.removeItem(atPath: root) } }

    /// Asset names in the folder: img0.jpg … img5.jpg/png.
    var imageNames: [String] {
        Self.sources.indices.map { "img\($0)." + (Self.sources[$0].hasSuffix(".png") ? "png" : "jpg") }
    }

    func configuration(_ adjust: (inout PipelineConfiguration) -> Void = { _ in }) -> PipelineConfiguration {
        var configuration = PipelineConfiguration(assetRoot: assets, cacheDirectory: cache)
        configuration.workers = 2
        adjust(&configuration)
        return configuration
    }

    func pipeline(paused: Bool = false, _ adjust: (inout PipelineConfiguration) -> Void = { _ in }) throws -> ThumbnailPipeline {
        try ThumbnailPipeline(configuration: configuration(adjust), startsWorkers: !paused)
    }
}

/// Collects answers from completions on any thread.
final class AnswerLog: Sendable {
    private let answers = Mutex<[(tag: String, response: PipelineResponse)]>([])

    func completion(_ tag: String) -> @Sendable (PipelineResponse) -> Void {
        { response in self.answers.withLock { $0.append((tag, response)) } }
    }

    var all: [(tag: String, response: PipelineResponse)] { answers.withLock { $0 } }

    func response(_ tag: String) -> PipelineResponse? { all.first { $0.tag == tag }?.response }

    /// Waits until `count` answers have arrived (or 20 s pass).
    func wait(for count: Int) async {
        let deadline = ContinuousClock.now + .seconds(20)
        while all.count < count && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
    }
}

extension PipelineResponse {
    var thumbnail: CachedThumbnail? { try? result.get() }
    var error: ThumbFailure? {
        if case .failure(let error) = result { return error }
        return nil
    }
}
