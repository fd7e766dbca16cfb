/// Placeholder until the WebP loader lands: answers what thumbd answered before (unsupported).
final class WebPLoader: FrameLoader {
    var storedWidth: Int { 0 }
    var storedHeight: Int { 0 }
    var orientation: Orientation { .up }

    init(source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        throw .unsupportedFormat(reason: "WebP is not read yet")
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        throw .unsupportedFormat(reason: "WebP is not read yet")
    }
}
