import Foundation
import Testing
import ThumbTestSupport
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
        limits.maxAnimationFrames = 77
        limits.maxAnimationPixels = 123_456_789
        var tuning = ShrinkPlan.Tuning()
        tuning.dctMargin = 2.5
        tuning.boxMargin = .nan
        var encoder = EncoderSettings()
        encoder.format = .png
        encoder.jpegQuality = 91
        encoder.jpegProgressive = true
        encoder.pngCompressionLevel = 9
        let rounded = SlotKind(name: "row ✓", widthPoints: 56.5, heightPoints: -0.0, scales: [1, 2, 3, Int.max], mode: .fill,
                               mask: .cornerRadius(points: 8.25), upscale: true, pregenerate: true, crop: .attention,
                               animation: .keep)
        return WorkerRenderOrder(requestID: 42, status: status, label: "sub/dir/ïmage.jpg", limits: limits, tuning: tuning, requests: [
            ThumbnailRequest(kind: rounded, scale: 3, encoder: encoder, appliesOrientation: false,
                             focus: FocusRegion(x: 0.125, y: 0.5, width: 0.25, height: 0.5)),
            ThumbnailRequest(kind: WorkerFixture.avatar, scale: -7, focus: FocusRegion(x: 1, y: 0),
                             placedCentre: FocusRegion(x: 0.375, y: 1)),
            ThumbnailRequest(kind: WorkerFixture.large, scale: 1),
        ], placeholder: .always)
    }

    @Test func renderOrderRoundTripsEveryField() throws {
        let order = Self.order
        let decoded = try WorkerRenderOrder.decode(frame: try order.encode())
        #expect(decoded.requests == order.requests && decoded.status == order.status && decoded.label == order.label)
        #expect(decoded.limits == order.limits && decoded.requestID == 42)
        #expect(decoded.tuning.dctMargin == 2.5 && decoded.tuning.boxMargin.isNaN)
        #expect(decoded.placeholder == .always && decoded.requests[0].kind.crop == .attention && decoded.requests[0].focus?.width == 0.25)
        #expect(decoded.requests[0].kind.animation == .keep && decoded.requests[1].kind.animation == .still)
        #expect(decoded.limits.maxAnimationFrames == 77 && decoded.limits.maxAnimationPixels == 123_456_789)
        #expect(decoded.requests[1].placedCentre == FocusRegion(x: 0.375, y: 1) && decoded.requests[0].placedCentre == nil)
    }

    @Test func aPlacedCentreOutsideTheUnitSquareIsRefused() throws {
        let frame = try Self.order.encode()
        let needle = withUnsafeBytes(of: 0.375.bitPattern.littleEndian, Array.init)
        let patched = Self.replacing(needle, with: withUnsafeBytes(of: (-0.5).bitPattern.littleEndian, Array.init), in: frame)
        #expect(patched != frame)
        #expect(throws: WorkerProtocolError(field: "render.requests[1].placedCentre", problem: "-0.5,1.0 is not a point of the unit square")) {
            try WorkerRenderOrder.decode(frame: patched)
        }
    }

    @Test func answerCarriesPlacementsOfTheOrdersAttentionCrops() throws {
        let order = Self.order // request 0 is an attention crop (rounded, 56.5 pt at @3x); 1 and 2 are not
        let shape = try #require(order.requests[0].placementShape)
        let jpeg = Thumbnail(encoded: [0xFF, 0xD8, 0xFF, 0xE0], format: .jpeg, width: 4, height: 3, warning: nil,
                             crop: CropRectangle(x: 0, y: 0, width: 4, height: 3))
        var answer = WorkerAnswer(results: [.success(jpeg), .success(jpeg), .success(jpeg)], cpuSeconds: 0.5,
                                  placements: [AttentionPlacement(shape: shape, centre: FocusRegion(x: 0.125, y: 0.75)!)])
        var requests = order.requests
        requests[0].encoder.format = .auto
        var sent = order
        sent.requests = requests
        let decoded = try WorkerAnswer.decode(frame: answer.encode(for: sent), requestID: 42, requests: requests, limits: order.limits,
                                              placeholder: .always)
        #expect(decoded.placements == answer.placements)
        // A placement of a shape no request has is not sent (the daemon could not key it).
        answer.placements = [AttentionPlacement(shape: "1x1", centre: FocusRegion(x: 0, y: 0)!)]
        let none = try WorkerAnswer.decode(frame: answer.encode(for: sent), requestID: 42, requests: requests, limits: order.limits,
                                           placeholder: .always)
        #expect(none.placements.isEmpty)
    }

    @Test func aFocusOutsideTheUnitSquareIsRefused() throws {
        let frame = try Self.order.encode()
        // The first request's focus x (0.125) as 1.5: the daemon never sends it, a hostile frame may.
        let needle = withUnsafeBytes(of: 0.125.bitPattern.littleEndian, Array.init)
        let patched = Self.replacing(needle, with: withUnsafeBytes(of: 1.5.bitPattern.littleEndian, Array.init), in: frame)
        #expect(patched != frame)
        #expect(throws: WorkerProtocolError.self) { try WorkerRenderOrder.decode(frame: patched) }
    }

    static func replacing(_ needle: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        guard let at = (0...(bytes.count - needle.count)).first(where: { Array(bytes[$0..<$0 + needle.count]) == needle }) else { return bytes }
        var copy = bytes
        copy.replaceSubrange(at..<at + needle.count, with: replacement)
        return copy
    }

    @Test func answerCarriesThePlaceholderOnlyWhenAsked() throws {
        var order = Self.order
        order.requests = [ThumbnailRequest(kind: WorkerFixture.large, scale: 1)]
        let png = Thumbnail(encoded: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], format: .png, width: 4, height: 3,
                            warning: nil, crop: CropRectangle(x: 0, y: 0, width: 400, height: 300))
        let placeholder = Placeholder(thumbHash: [1, 2, 3, 4, 5, 6, 7], averageRed: 9, averageGreen: 8, averageBlue: 7, averageAlpha: 255)
        let answer = WorkerAnswer(results: [.success(png)], cpuSeconds: 0.5, placeholder: placeholder)
        let decoded = try WorkerAnswer.decode(frame: answer.encode(for: order), requestID: 42, requests: order.requests,
                                              limits: order.limits, placeholder: .always)
        let crop = try decoded.results[0].get().crop
        #expect(decoded.placeholder == placeholder && crop == png.crop)
        // Asked for by nobody: refused, as any field the daemon did not ask for.
        #expect(throws: WorkerProtocolError.self) {
            try WorkerAnswer.decode(frame: answer.encode(for: order), requestID: 42, requests: order.requests, limits: order.limits)
        }
        order.placeholder = .skip
        let unasked = try WorkerAnswer.decode(frame: answer.encode(for: order), requestID: 42, requests: order.requests, limits: order.limits)
        #expect(unasked.placeholder == nil)
    }

    @Test func thePlaceholderDemandRoundTripsAndAnUnknownOneIsRefused() throws {
        var order = Self.order
        var frames: [[UInt8]] = []
        for demand in PlaceholderDemand.allCases {
            order.placeholder = demand
            frames.append(try order.encode())
            #expect(try WorkerRenderOrder.decode(frame: frames.last!).placeholder == demand)
        }
        // The one byte where the orders differ is the demand.
        let at = try #require(frames[0].indices.first { frames[0][$0] != frames[2][$0] })
        #expect(frames[0].indices.filter { frames[0][$0] != frames[2][$0] } == [at] && frames[1][at] == 1)
        frames[0][at] = 3
        #expect(throws: WorkerProtocolError(field: "render.placeholder", problem: "3 is not 0 (skip), 1 (if whole frame) or 2 (always)")) {
            try WorkerRenderOrder.decode(frame: frames[0])
        }
        // Wanted if the frame was whole: the answer may carry one or not.
        order.requests = [ThumbnailRequest(kind: WorkerFixture.large, scale: 1)]
        order.placeholder = .ifWholeFrame
        let png = Thumbnail(encoded: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], format: .png, width: 4, height: 3,
                            warning: nil, crop: CropRectangle(x: 0, y: 0, width: 400, height: 300))
        let placeholder = Placeholder(thumbHash: [1, 2, 3, 4, 5, 6, 7], averageRed: 9, averageGreen: 8, averageBlue: 7, averageAlpha: 255)
        for carried in [placeholder, nil] {
            let answer = WorkerAnswer(results: [.success(png)], cpuSeconds: 0.5, placeholder: carried)
            let decoded = try WorkerAnswer.decode(frame: answer.encode(for: order), requestID: 42, requests: order.requests,
                                                  limits: order.limits, placeholder: .ifWholeFrame)
            #expect(decoded.placeholder == carried)
        }
    }

    @Test func answerRoundTripsThumbnailsAndEveryFailure() throws {
        let order = Self.order
        let jpeg = Thumbnail(encoded: [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 1000), format: .jpeg, width: 48, height: 48,
                             warning: "Corrupt JPEG data: 12 extraneous bytes", crop: CropRectangle(x: 10.5, y: 0, width: 300, height: 300))
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
                                                  limits: threeRequests.limits, placeholder: .always)
            #expect(decoded.cpuSeconds == 0.25)
            let first = try decoded.results[0].get()
            #expect(first.bytes == jpeg.bytes && first.width == 48 && first.warning == jpeg.warning && first.format == .jpeg)
            #expect(first.crop == jpeg.crop)
            #expect(decoded.results[1].failure == failure)
        }
    }

    @Test func helloRoundTrips() throws {
        #expect(try WorkerHello.decode(frame: WorkerHello(pid: 31337).encode()) == WorkerHello(pid: 31337))
    }

    /// The protocol lists each value's fields by hand: a new one must be carried (and this count raised).
    @Test func imagingValuesHaveTheFieldsTheProtocolCarries() {
        #expect(Mirror(reflecting: ImageLimits()).children.count == 9)
        #expect(Mirror(reflecting: VideoLimits()).children.count == 4)
        #expect(Mirror(reflecting: ShrinkPlan.Tuning()).children.count == 2)
        #expect(Mirror(reflecting: EncoderSettings()).children.count == 8)
        #expect(Mirror(reflecting: WorkerFixture.avatar).children.count == 10)
        #expect(Mirror(reflecting: ThumbnailRequest(kind: WorkerFixture.avatar, scale: 1)).children.count == 6)
        #expect(Mirror(reflecting: Self.status).children.count == 4)
        let crop = CropRectangle(x: 0, y: 0, width: 1, height: 1)
        #expect(Mirror(reflecting: Thumbnail(encoded: [], format: .png, width: 1, height: 1, warning: nil, crop: crop)).children.count == 6)
        #expect(Mirror(reflecting: crop).children.count == 4)
        #expect(Mirror(reflecting: Placeholder(thumbHash: [], averageRed: 0, averageGreen: 0, averageBlue: 0, averageAlpha: 0))
            .children.count == 5)
        #expect(SlotKind.CropMode.allCases.count == 3)
        #expect(SlotKind.Animation.allCases.count == 2)
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
                             format: .jpeg, width: 8, height: 8, warning: nil, crop: CropRectangle(x: 0, y: 0, width: 8, height: 8))
        let wide = Thumbnail(encoded: [0xFF, 0xD8, 0xFF], format: .jpeg, width: 65, height: 64, warning: nil,
                             crop: CropRectangle(x: 0, y: 0, width: 65, height: 64))
        let frame = WorkerAnswer(results: [.success(huge), .success(wide)], cpuSeconds: .nan).encode(for: order)
        let decoded = try WorkerAnswer.decode(frame: frame, requestID: 42, requests: order.requests, limits: order.limits)
        guard case .imaging(.encodingFailed) = decoded.results[0].failure, case .imaging(.outputTooLarge) = decoded.results[1].failure else {
            throw TestFailure("\(decoded.results)")
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
        #expect(WorkerAnswer.maxPayloadBytes(requestCount: -5, limits: limits) == 64)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
