import Foundation
@testable import FuzzDoors
import Testing
import ThumbImaging
import ThumbSystem
import ThumbWorker

/// The worker-render seeds are written by the protocol's own encoder from the orders below:
/// `THUMBD_WRITE_SEEDS=1 swift test --filter WorkerSeedWriter` writes them after a protocol
/// change; without it this checks the files are still what the encoder writes (a stale seed
/// would start the fuzzer outside the format).
@Suite struct WorkerSeedWriter {
    static let status = FileStatus(size: 5_770, modifiedNanoseconds: 1_700_000_000_123_456_789, inode: 1_234, device: 2_049)

    static var orders: [(name: String, order: WorkerRenderOrder)] {
        var everyField = EncoderSettings()
        everyField.format = .webp
        everyField.jpegQuality = 91
        everyField.jpegProgressive = true
        everyField.pngCompressionLevel = 9
        everyField.webpQuality = 72
        everyField.webpMode = .lossless
        everyField.avifQuality = 44
        everyField.avifSpeed = 8
        var avif = EncoderSettings()
        avif.format = .avif
        var limits = ImageLimits()
        limits.maxPixels = 40_000_000
        limits.maxDimension = 20_000
        limits.maxFileBytes = 64 << 20
        limits.maxProgressiveScans = 100
        limits.maxDecoderMemoryBytes = 512 << 20
        limits.maxOutputPixels = 2048 * 2048
        limits.video.codecs = [.h264, .vp9, .mjpeg]
        limits.video.maxBytesRead = 8 << 20
        limits.video.maxPackets = 700
        limits.video.previewFrames = 12
        var tuning = ShrinkPlan.Tuning()
        tuning.dctMargin = 3
        tuning.boxMargin = 2.5
        let grid = SlotKind(name: "grid", widthPoints: 117.5, heightPoints: 88, scales: [2, 3], mode: .fit,
                            mask: .cornerRadius(points: 12), upscale: true, pregenerate: true, crop: .focus)
        let requests = ImageDoors.requests
        return [
            ("one-request.bin", WorkerRenderOrder(requestID: 1, status: status, label: "photos/a.jpg", limits: ImageLimits(),
                                                  tuning: ShrinkPlan.Tuning(), requests: [requests[0]])),
            ("four-requests.bin", WorkerRenderOrder(requestID: 1, status: status, label: "photos/testorig.jpg", limits: ImageLimits(),
                                                    tuning: ShrinkPlan.Tuning(), requests: requests)),
            ("every-field.bin", WorkerRenderOrder(requestID: 0xFEED, status: status, label: "sub/dir/ïmage.heic", limits: limits, tuning: tuning,
                                                  requests: [ThumbnailRequest(kind: grid, scale: 3, encoder: everyField, appliesOrientation: false,
                                                                              focus: FocusRegion(x: 0.25, y: 0.125, width: 0.5, height: 0.25)),
                                                             ThumbnailRequest(kind: requests[1].kind, scale: 3, encoder: avif,
                                                                              placedCentre: FocusRegion(x: 0.625, y: 0.5))],
                                                  placeholder: .always)),
        ]
    }

    @Test func renderSeedsAreWhatTheEncoderWrites() throws {
        let folder = WorkerSeedTests.seeds + "/" + FuzzDoor.workerRender.rawValue
        let writes = ProcessInfo.processInfo.environment["THUMBD_WRITE_SEEDS"] != nil
        for (name, order) in Self.orders {
            let bytes = try order.encode()
            let path = folder + "/" + name
            if writes { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
            let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(stored == bytes, "\(name) is stale: THUMBD_WRITE_SEEDS=1 swift test --filter WorkerSeedWriter")
        }
    }

    /// Answers to the order the worker-answer door checks against (`WorkerDoors`): real
    /// thumbnails of a corpus-sized image, each failure kind, a placeholder and the row's placement.
    static var answers: [(name: String, answer: WorkerAnswer)] {
        get throws {
            var pixels = [UInt8](repeating: 0, count: 64 * 48 * 3)
            for index in pixels.indices { pixels[index] = UInt8(truncatingIfNeeded: index * 7 / 5) }
            let source = try ImageEncoder.encode(PixelBuffer(width: 64, height: 48, channels: 3, bytes: pixels), as: .jpeg,
                                                 settings: EncoderSettings())
            let rendered = try Thumbnailer().thumbnailSet(of: SourceBytes(source), requests: ImageDoors.requests, placeholder: .always)
            let placeholder = Placeholder(thumbHash: [0x63, 0x08, 0x12, 0x0D, 0x82, 0x77, 0x87, 0x78, 0x80, 0x78, 0x88, 0x87, 0x87],
                                          averageRed: 120, averageGreen: 96, averageBlue: 64, averageAlpha: 255)
            let thumbnails = rendered.thumbnails.map { Result<Thumbnail, WorkerRenderFailure>.success($0) }
            let failures: [Result<Thumbnail, WorkerRenderFailure>] = [
                .failure(.imaging(.undecodable(reason: "Not a JPEG file: starts with 0x00 0x01"))),
                .failure(.read(.changed(reason: "photos/a.jpg was modified while being read"))),
                .failure(.imaging(.outputTooLarge(reason: "a 8192x8192 output exceeds the 16777216-pixel output limit"))),
                .failure(.imaging(.cancelled)),
            ]
            return [
                ("four-thumbnails.bin", WorkerAnswer(results: thumbnails, cpuSeconds: 0.0125, placeholder: rendered.placeholder ?? placeholder,
                                                     placements: rendered.placements, sourceFormat: rendered.sourceFormat)),
                ("mixed-failures.bin", WorkerAnswer(results: [thumbnails[0], failures[0], thumbnails[2], failures[1]], cpuSeconds: 0.5,
                                                    sourceFormat: .mp4)),
                ("every-failure.bin", WorkerAnswer(results: failures, cpuSeconds: 0)),
            ]
        }
    }

    @Test func answerSeedsAreWhatTheEncoderWrites() throws {
        let folder = WorkerSeedTests.seeds + "/" + FuzzDoor.workerAnswer.rawValue
        let writes = ProcessInfo.processInfo.environment["THUMBD_WRITE_SEEDS"] != nil
        let order = WorkerRenderOrder(requestID: WorkerDoors.requestID, status: Self.status, label: "photos/a.jpg",
                                      limits: WorkerDoors.limits, tuning: ShrinkPlan.Tuning(), requests: ImageDoors.requests,
                                      placeholder: .always)
        for (name, answer) in try Self.answers {
            let bytes = answer.encode(for: order)
            let path = folder + "/" + name
            if writes { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
            let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(stored == bytes, "\(name) is stale: THUMBD_WRITE_SEEDS=1 swift test --filter WorkerSeedWriter")
        }
    }
}
