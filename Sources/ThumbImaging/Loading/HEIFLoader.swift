/// Placeholder until the HEIF loader lands: answers what thumbd answered before (unsupported).
final class HEIFLoader: FrameLoader {
    var storedWidth: Int { 0 }
    var storedHeight: Int { 0 }
    var orientation: Orientation { .up }

    init(source: SourceBytes, format: SourceFormat, limits: ImageLimits) throws(ImagingError) {
        throw .unsupportedFormat(reason: "HEIF is not read yet")
    }

    func load(maxShrink: Double, isCancelled: CancellationCheck?) throws(ImagingError) -> LoadedFrame {
        throw .unsupportedFormat(reason: "HEIF is not read yet")
    }
}
