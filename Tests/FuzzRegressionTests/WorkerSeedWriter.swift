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
        var tuning = ShrinkPlan.Tuning()
        tuning.dctMargin = 3
        tuning.boxMargin = 2.5
        let grid = SlotKind(name: "grid", widthPoints: 117.5, heightPoints: 88, scales: [2, 3], mode: .fit,
                            mask: .cornerRadius(points: 12), upscale: true, pregenerate: true)
        let requests = ImageDoors.requests
        return [
            ("one-request.bin", WorkerRenderOrder(requestID: 1, status: status, label: "photos/a.jpg", limits: ImageLimits(),
                                                  tuning: ShrinkPlan.Tuning(), requests: [requests[0]])),
            ("four-requests.bin", WorkerRenderOrder(requestID: 1, status: status, label: "photos/testorig.jpg", limits: ImageLimits(),
                                                    tuning: ShrinkPlan.Tuning(), requests: requests)),
            ("every-field.bin", WorkerRenderOrder(requestID: 0xFEED, status: status, label: "sub/dir/ïmage.heic", limits: limits, tuning: tuning,
                                                  requests: [ThumbnailRequest(kind: grid, scale: 3, encoder: everyField, appliesOrientation: false),
                                                             ThumbnailRequest(kind: requests[1].kind, scale: 3, encoder: avif)])),
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
}
