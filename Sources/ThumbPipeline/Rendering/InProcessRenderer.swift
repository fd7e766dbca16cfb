package import ThumbImaging

/// Reads and decodes on the render thread itself (`sandbox: false`).
package final class InProcessRenderer: ThumbnailRendering {
    let thumbnailer: Thumbnailer
    let maxFileBytes: Int

    package init(thumbnailer: Thumbnailer, maxFileBytes: Int) {
        self.thumbnailer = thumbnailer
        self.maxFileBytes = maxFileBytes
    }

    package func start() {}
    package func stop() {}
    /// The decode asks `isCancelled` at every checkpoint: nothing to pass on.
    package func cancelCurrentRender() {}

    package func render(_ file: AssetFile, requests: [ThumbnailRequest], placeholder: PlaceholderDemand,
                        isCancelled: @escaping @Sendable () -> Bool) -> RenderAttempt {
        let source: SourceBytes
        do {
            source = try file.readAll(maxBytes: maxFileBytes)
        } catch {
            switch error {
            case .changed(let reason): return .changed(reason: reason, cpuSeconds: 0)
            case .tooLarge(let reason): return .failed(.tooLarge(reason: reason), cpuSeconds: 0)
            case .unreadable(let reason): return .failed(.unreadable(path: file.version.path, reason: reason), cpuSeconds: 0)
            }
        }
        do {
            let rendered = try thumbnailer.thumbnailSet(of: source, requests: requests, placeholder: placeholder,
                                                        isCancelled: isCancelled)
            // The render thread's own CPU time is counted by the thread: none to add.
            return .rendered(rendered.thumbnails.map { .success($0) }, placeholder: rendered.placeholder,
                             placements: rendered.placements, sourceFormat: rendered.sourceFormat, cpuSeconds: 0)
        } catch {
            return .failed(ThumbFailure(error), cpuSeconds: 0)
        }
    }
}
