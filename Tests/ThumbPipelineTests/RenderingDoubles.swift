import ThumbImaging
@testable import ThumbPipeline

/// An asset root whose every render open calls `opened` between the open and the read (a test
/// changes the file there): the pipeline's `AssetOpening`, substituted.
struct OpenObservingRoot: AssetOpening {
    let root: AssetRoot
    let opened: @Sendable (AssetVersion) -> Void

    func openForReading(_ relative: String) throws(AssetPathError) -> AssetFile {
        let file = try root.openForReading(relative)
        opened(file.version)
        return file
    }
}

/// The in-process renderer, with `checkpoint` called at each of the decode's cancellation
/// checkpoints (a test acts mid-decode there): the pipeline's `ThumbnailRendering`, substituted.
final class CheckpointObservingRenderer: ThumbnailRendering {
    let inner: InProcessRenderer
    let checkpoint: @Sendable () -> Void

    init(configuration: PipelineConfiguration, checkpoint: @escaping @Sendable () -> Void) {
        inner = InProcessRenderer(thumbnailer: Thumbnailer(limits: configuration.limits, tuning: configuration.tuning),
                                  maxFileBytes: configuration.limits.maxFileBytes)
        self.checkpoint = checkpoint
    }

    func start() { inner.start() }
    func stop() { inner.stop() }
    func cancelCurrentRender() { inner.cancelCurrentRender() }

    func render(_ file: AssetFile, requests: [ThumbnailRequest], placeholder: PlaceholderDemand,
                isCancelled: @escaping @Sendable () -> Bool) -> RenderAttempt {
        let checkpoint = checkpoint
        return inner.render(file, requests: requests, placeholder: placeholder) {
            checkpoint()
            return isCancelled()
        }
    }
}
