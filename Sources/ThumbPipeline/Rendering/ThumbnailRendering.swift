package import ThumbImaging

/// What a render thread's renderer does: one read and one decode of an opened asset for every
/// request of a group, in this process (`InProcessRenderer`, `sandbox: false`) or in the
/// thread's worker process (`SandboxedRenderer`). Named by its ability: tests substitute their
/// own (`ThumbnailPipeline.init(configuration:startsWorkers:renderers:)`).
///
/// Opening the file, trying again when it changed, storing what was rendered and remembering
/// what failed are the pipeline's (`GroupRender`), the same for every renderer.
package protocol ThumbnailRendering: AnyObject, Sendable {
    /// On the render thread, before its first group: a worker process is spawned now, so that
    /// the first request does not wait for it.
    func start()
    /// Renders `requests` from `file`. `isCancelled` is asked at the decode's checkpoints.
    func render(_ file: AssetFile, requests: [ThumbnailRequest], placeholder: PlaceholderDemand,
                isCancelled: @escaping @Sendable () -> Bool) -> RenderAttempt
    /// Stops the render under way as soon as it can (from any thread; every job of the group
    /// was cancelled). A renderer that asks `isCancelled` often enough may do nothing.
    func cancelCurrentRender()
    /// On the render thread, when it ends.
    func stop()
}

/// What one attempt at rendering an opened file gave.
package enum RenderAttempt: Sendable {
    /// One result per request, in order, with what the decode learnt of the version (its
    /// format among them, nil when its bytes are none of the table's).
    case rendered([Result<Thumbnail, ThumbFailure>], placeholder: Placeholder?, placements: [AttentionPlacement], sourceFormat: SourceFormat?,
                  cpuSeconds: Double)
    /// The file changed while it was read: opened and tried once more, then `assetChanging`.
    case changed(reason: String, cpuSeconds: Double)
    /// Every request failed the same way (remembered when the failure table remembers it).
    case failed(ThumbFailure, cpuSeconds: Double)
}

/// Opens an asset beneath the root for reading: the one open a render makes (`AssetRoot`).
/// Tests substitute one that acts between the open and the read.
package protocol AssetOpening: Sendable {
    func openForReading(_ relative: String) throws(AssetPathError) -> AssetFile
}

extension AssetRoot: AssetOpening {}
