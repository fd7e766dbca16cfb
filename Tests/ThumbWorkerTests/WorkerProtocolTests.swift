import Foundation
import Testing
import ThumbImaging
import ThumbSystem
@testable import ThumbWorker

/// Round trips of every message, and the guard that a field added to an imaging value fails here
/// until the protocol carries it.
@Suite struct WorkerProtocolTests {
    static let status = FileStatus(size: 123_456, modifiedNanoseconds: -1_700_000_000_123_456_789, inode: .max, device: 2049)

    static var order: WorkerRenderOrder {
        var limits = ImageLimits()
        limits.maxPixels = 12_345_678
        limits.maxDimension = 4321
        limits.maxFileBytes = 99 << 20
        limits.maxProgressiveScans = 17
        limits.maxDecoderMemoryBytes = 3 << 28
        limits.maxOutputPixels = 2048 * 2048
        var tuning = ShrinkPlan.Tuning()
        tuning.dctMargin = 2.5
        tuning.boxMargin = .nan
        var encoder = EncoderSettings()
        encoder.format = .png
        encoder.jpegQuality = 91
        encoder.jpegProgressive = true
        encoder.pngCompressionLevel = 9
        let rounded = SlotKind(name: "row ✓", widthPoints: 56.5, heightPoints: -0.0, scales: [1, 2, 3, Int.max], mode: .fill,
                               mask: .cornerRadius(points: 8.25), upscale: true, pregenerate: true)
        return WorkerRenderOrder(requestID: 42, status: status, label: "sub/dir/ïmage.jpg", limits: limits, tuning: tuning, requests: [
            ThumbnailRequest(kind: rounded, scale: 3, encoder: encoder, appliesOrientation: false),
            ThumbnailRequest(kind: WorkerFixture.avatar, scale: -7),
            ThumbnailRequest(kind: WorkerFixture.large, scale: 1),
        ])
    }

    @Test func renderOrderRoundTripsEveryField() throws {
        let order = Self.order
        let decoded = try WorkerRenderOrder.decode(frame: try order.encode())
        #expect(decoded.requests == order.requests && decoded.status == order.status && decoded.label == order.label)
        #expect(decoded.limits == order.limits && decoded.requestID == 42)
        #expect(decoded.tuning.dctMargin == 2.5 && decoded.tuning.boxMargin.isNaN)
    }

    @Test func answerRoundTripsThumbnailsAndEveryFailure() throws {
        let order = Self.order
        let jpeg = Thumbnail(encoded: [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 1000), format: .jpeg, width: 48, height: 48,
                             warning: "Corrupt JPEG data: 12 extraneous bytes")
        let failures: [WorkerRenderFailure] = [
            .imaging(.unsupportedFormat(reason: "a")), .imaging(.undecodable(reason: "b")), .imaging(.tooLarge(reason: "c")),
            .imaging(.outputTooLarge(reason: "d")), .imaging(.cancelled), .imaging(.encodingFailed(reason: "e")),
            .read(.tooLarge(reason: "f")), .read(.changed(reason: "g")), .read(.unreadable(reason: "h")),
        ]
        for failure in failures {
            var threeRequests = order
            threeRequests.requests[0].encoder.format = .auto
            let answer = WorkerAnswer(results: [.success(jpeg), .failure(failure), .success(jpeg)], cpuSeconds: 0.25)
            let decoded = try WorkerAnswer.decode(frame: answer.encode(for: threeRequests), requestID: 42, requests: threeRequests.requests,
                                                  limits: threeRequests.limits)
            #expect(decoded.cpuSeconds == 0.25)
            let first = try decoded.results[0].get()
            #expect(first.bytes == jpeg.bytes && first.width == 48 && first.warning == jpeg.warning && first.format == .jpeg)
            #expect(decoded.results[1].failure == failure)
        }
    }

    @Test func helloRoundTrips() throws {
        #expect(try WorkerHello.decode(frame: WorkerHello(pid: 31337).encode()) == WorkerHello(pid: 31337))
    }

    /// The protocol lists each value's fields by hand: a new one must be carried (and this count raised).
    @Test func imagingValuesHaveTheFieldsTheProtocolCarries() {
        #expect(Mirror(reflecting: ImageLimits()).children.count == 6)
        #expect(Mirror(reflecting: ShrinkPlan.Tuning()).children.count == 2)
        #expect(Mirror(reflecting: EncoderSettings()).children.count == 8)
        #expect(Mirror(reflecting: WorkerFixture.avatar).children.count == 8)
        #expect(Mirror(reflecting: ThumbnailRequest(kind: WorkerFixture.avatar, scale: 1)).children.count == 4)
        #expect(Mirror(reflecting: Self.status).children.count == 4)
        #expect(Mirror(reflecting: Thumbnail(encoded: [], format: .png, width: 1, height: 1, warning: nil)).children.count == 5)
        #expect(EncoderSettings.Format.allCases.count == 5)
        #expect(EncoderSettings.WebPMode.allCases.count == 3)
        #expect(ImageFormat.allCases.count == 4)
    }

    /// What the worker sends always passes the daemon's checks: a thumbnail past its bound goes
    /// as a failure instead.
    @Test func workerFitsItsAnswerWithinTheBounds() throws {
        var order = Self.order
        order.requests = [order.requests[1], order.requests[2]]
        order.limits.maxOutputPixels = 64 * 64
        let huge = Thumbnail(encoded: [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0, count: WorkerAnswer.maxEncodedBytes(width: 8, height: 8)),
                             format: .jpeg, width: 8, height: 8, warning: nil)
        let wide = Thumbnail(encoded: [0xFF, 0xD8, 0xFF], format: .jpeg, width: 65, height: 64, warning: nil)
        let frame = WorkerAnswer(results: [.success(huge), .success(wide)], cpuSeconds: .nan).encode(for: order)
        let decoded = try WorkerAnswer.decode(frame: frame, requestID: 42, requests: order.requests, limits: order.limits)
        guard case .imaging(.encodingFailed) = decoded.results[0].failure, case .imaging(.outputTooLarge) = decoded.results[1].failure else {
            throw WorkerFixture.Failure("\(decoded.results)")
        }
        #expect(decoded.cpuSeconds == 0)
    }

    @Test func answerBoundFollowsTheOutputLimit() {
        var limits = ImageLimits()
        let atDefault = WorkerAnswer.maxPayloadBytes(requestCount: 1, limits: limits)
        #expect(atDefault > 6 * limits.maxOutputPixels && atDefault < 7 * limits.maxOutputPixels)
        #expect(WorkerAnswer.maxPayloadBytes(requestCount: 1000, limits: limits) == WorkerProtocol.maxAnswerPayloadBytes)
        limits.maxOutputPixels = .max
        #expect(WorkerAnswer.maxPayloadBytes(requestCount: .max, limits: limits) == WorkerProtocol.maxAnswerPayloadBytes)
        limits.maxOutputPixels = .min
        #expect(WorkerAnswer.maxPayloadBytes(requestCount: -5, limits: limits) == 12)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
