import Foundation
import Testing
@testable import ThumbImaging

/// The JPEG path's frame kept for attention crops (`FrameRows`): one frame serves every output
/// of a decode, and a frame over `maxDecoderMemoryBytes` is not kept (the crop is centred, and
/// the thumbnail says so) rather than allocated.
@Suite("Attention crops on the kept JPEG frame")
struct AttentionFrameTests {
    static let photo = Paths.packageRoot + "/Samples/assets/portrait-exif8.jpg"

    static func avatar(scale: Int, crop: SlotKind.CropMode = .attention) throws -> ThumbnailRequest {
        var request = try Sample.request("contact-avatar@\(scale)x")
        request.kind.crop = crop
        return request
    }

    @Test("two attention outputs of one decode share the frame: the same pixels and crops as rendered apart")
    func outputsShareOneFrame() throws {
        let source = try loadSource(Self.photo)
        let thumbnailer = Thumbnailer()
        let requests = [try Self.avatar(scale: 2), try Self.avatar(scale: 3)]
        let together = try thumbnailer.renderJPEG(source, requests: requests, isCancelled: nil)
        for (request, shared) in zip(requests, together) {
            let alone = try thumbnailer.renderJPEG(source, requests: [request], isCancelled: nil)[0]
            #expect(shared.pixels == alone.pixels && shared.crop == alone.crop, "@\(request.scale)x")
            #expect(shared.warning == nil)
        }
    }

    @Test("a frame over the decoder memory limit is not kept: the crop is centred and the thumbnail says why")
    func frameOverTheLimitIsCentred() throws {
        let source = try loadSource(Self.photo)
        var limits = ImageLimits()
        limits.maxDecoderMemoryBytes = 64 << 10
        let limited = Thumbnailer(limits: limits)
        let skipped = try limited.render(source, request: Self.avatar(scale: 3))
        let centred = try Thumbnailer().render(source, request: Self.avatar(scale: 3, crop: .centre))
        #expect(skipped.crop == centred.crop && skipped.pixels.bytes == centred.pixels.bytes)
        #expect(skipped.warning?.contains("attention crop skipped") == true && skipped.warning?.contains("decoder memory limit") == true,
                "\(skipped.warning ?? "no warning")")
        // Within the limit, the same photo's attention crop moves off the centre: the limit, not
        // the image, made the difference above.
        let placed = try Thumbnailer().render(source, request: Self.avatar(scale: 3))
        #expect(placed.warning == nil)
        #expect(placed.crop != centred.crop, "attention chose the centre of this photo too: pick another photo for this test")
    }
}
