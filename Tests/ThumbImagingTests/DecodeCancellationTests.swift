import Foundation
import Synchronization
import Testing
@testable import ThumbImaging

/// A cancellation check that counts its calls and answers "cancel" from call `cancelAt` on
/// (never, when nil). The counts make the tests exact: a cancel stops at the first true.
final class CountingCheck: Sendable {
    private let count = Mutex(0)
    let cancelAt: Int?

    init(cancelAt: Int? = nil) { self.cancelAt = cancelAt }

    var calls: Int { count.withLock { $0 } }

    var check: CancellationCheck {
        { [self] in
            let call = count.withLock { calls in
                calls += 1
                return calls
            }
            return cancelAt.map { call >= $0 } ?? false
        }
    }
}

/// Cancellation reaches the decoders inside their long library calls: a progressive JPEG's
/// scans (all consumed by libjpeg's start, before any row) and an Adam7 PNG's seven passes.
@Suite("Decode cancellation")
struct DecodeCancellationTests {
    /// 1900x1263, 7 scans, 1.3 MB: the largest real progressive JPEG of the corpus.
    static let progressivePath = Paths.corpusFile("edge-cases", "imagor/jpg-24bit-icc-adobe-rgb.jpg")
    /// 1800x1200 baseline (sequential) JPEG.
    static let sequentialPath = Paths.corpusFile("exif-orientation", "Landscape_1.jpg")

    static func render(_ path: String, _ check: CancellationCheck?) throws -> PixelBuffer {
        try Thumbnailer().render(loadSource(path), request: Sample.request("large"), isCancelled: check).pixels
    }

    /// Runs `body` and returns the ImagingError it threw, or nil when it returned (any other
    /// error, from reading the corpus, is recorded as an issue).
    static func thrown(_ body: () throws -> Void) -> ImagingError? {
        do {
            try body()
        } catch let error as ImagingError {
            return error
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        return nil
    }

    static func decoder(_ path: String, _ check: CancellationCheck?) throws -> JPEGDecoder {
        try JPEGDecoder(source: loadSource(path), limits: ImageLimits(), isCancelled: check)
    }

    @Test("a progressive JPEG's start asks the check before any row; a cancel there stops it (and a render) at once")
    func progressiveStartIsInterruptible() throws {
        let counting = CountingCheck()
        let decoder = try Self.decoder(Self.progressivePath, counting.check)
        try #require(decoder.header.progressive != 0, "the test file must be progressive")
        _ = try decoder.start(scaleDenominator: 8)
        // No row has been read: every call so far came from libjpeg consuming the scans.
        #expect(counting.calls >= 1, "start of a progressive JPEG never asked the cancellation check")

        for cancelAt in [1, 2, 50] {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let cancelled = try Self.decoder(Self.progressivePath, cancelling.check)
            let error = Self.thrown { _ = try cancelled.start(scaleDenominator: 8) }
            #expect(error == .cancelled, "cancel at call \(cancelAt): start gave \(String(describing: error))")
            #expect(cancelling.calls == cancelAt, "cancel at call \(cancelAt): the check was asked \(cancelling.calls) times")
            // The abandoned decoder stays cancelled without touching libjpeg's state or the check again.
            var row = [UInt8](repeating: 0, count: 4 * decoder.storedWidth)
            let again = Self.thrown {
                _ = try row.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                    try cancelled.readRows(into: buffer.baseAddress!, rowStride: buffer.count, maxRows: 1)
                }
            }
            #expect(again == .cancelled)
            #expect(cancelling.calls == cancelAt)
        }

        // Through the public API: the first check is the one inside start, and the render ends there.
        let cancelling = CountingCheck(cancelAt: 1)
        let error = Self.thrown { _ = try Self.render(Self.progressivePath, cancelling.check) }
        #expect(error == .cancelled, "\(String(describing: error))")
        #expect((1...2).contains(cancelling.calls), "the check was asked \(cancelling.calls) times")
    }

    @Test("after cancelled decodes at any checkpoint, the progressive JPEG and others decode identically",
          arguments: [progressivePath, sequentialPath])
    func decodesIdenticallyAfterCancels(_ path: String) throws {
        let reference = try Self.render(path, nil)
        let reference2 = try Self.render(Self.sequentialPath, nil)
        let counting = CountingCheck()
        #expect(try Self.render(path, counting.check) == reference, "a check that never cancels changed the pixels")
        let total = counting.calls
        try #require(total >= 2)
        for cancelAt in Set([1, 2, total / 2, total - 1, total]).sorted() {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = Self.thrown { _ = try Self.render(path, cancelling.check) }
            #expect(error == .cancelled, "cancel at call \(cancelAt) of \(total): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt, "cancel at call \(cancelAt) of \(total): asked \(cancelling.calls) times")
            #expect(try Self.render(path, nil) == reference, "after a cancel at call \(cancelAt)")
            #expect(try Self.render(Self.sequentialPath, nil) == reference2, "another file after a cancel at call \(cancelAt)")
        }
    }

    @Test("a sequential JPEG still cancels: between row batches and inside a row read")
    func sequentialCancels() throws {
        let first = CountingCheck(cancelAt: 1)
        let error = Self.thrown { _ = try Self.render(Self.sequentialPath, first.check) }
        #expect(error == .cancelled, "\(String(describing: error))")
        #expect(first.calls == 1)

        let counting = CountingCheck()
        let decoder = try Self.decoder(Self.sequentialPath, counting.check)
        try #require(decoder.header.progressive == 0, "the test file must be sequential")
        let scaled = try decoder.start(scaleDenominator: 8)
        let asked = counting.calls // a single scan: nothing is consumed before the rows
        let cancelling = CountingCheck(cancelAt: asked + 1)
        let cancelled = try Self.decoder(Self.sequentialPath, cancelling.check)
        _ = try cancelled.start(scaleDenominator: 8)
        var rows = [UInt8](repeating: 0, count: scaled.width * scaled.components * 16)
        let rowError = Self.thrown {
            _ = try rows.withUnsafeMutableBufferPointer { (buffer) throws(ImagingError) -> Int in
                try cancelled.readRows(into: buffer.baseAddress!, rowStride: scaled.width * scaled.components, maxRows: 16)
            }
        }
        #expect(rowError == .cancelled, "a row read asked to cancel gave \(String(describing: rowError))")
        #expect(cancelling.calls == asked + 1)
    }

    @Test("an Adam7 PNG asks the check between slices of its passes, and stops at the first true",
          arguments: [("pngsuite", "basi2c08.png"), ("pngsuite", "basi6a16.png"), ("libpng-testpngs", "pngtest.png")])
    func interlacedPNGCancels(_ set: String, _ file: String) throws {
        let path = Paths.corpusFile(set, file)
        let reference = try Self.render(path, nil)
        let counting = CountingCheck()
        #expect(try Self.render(path, counting.check) == reference)
        let total = counting.calls
        // Before, one check came before all seven passes and one after them.
        #expect(total >= 7, "\(file): the check was asked \(total) times over seven passes")
        for cancelAt in 1...total {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = Self.thrown { _ = try Self.render(path, cancelling.check) }
            #expect(error == .cancelled, "\(file), cancel at call \(cancelAt) of \(total): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt, "\(file), cancel at call \(cancelAt): asked \(cancelling.calls) times")
        }
        #expect(try Self.render(path, nil) == reference)
    }
}

/// The encoders ask the check between slices of rows: zlib makes a PNG avatar the longest
/// stretch of a small thumbnail.
@Suite("Encode cancellation")
struct EncodeCancellationTests {
    @Test("an encode asks the check between slices of rows, stops at the first true, and is unchanged otherwise",
          arguments: [ImageFormat.png, .jpeg])
    func encodeCancels(_ format: ImageFormat) throws {
        let kind = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [3], mode: .fill, mask: .circle)
        let image = try Thumbnailer().render(loadSource(DecodeCancellationTests.sequentialPath),
                                             request: ThumbnailRequest(kind: kind, scale: 3)).pixels
        try #require(image.height == 144 && image.channels == 4)
        let reference = try ImageEncoder.encode(image, as: format, settings: EncoderSettings())
        let counting = CountingCheck()
        #expect(try ImageEncoder.encode(image, as: format, settings: EncoderSettings(), isCancelled: counting.check) == reference)
        let total = counting.calls
        // 144 rows of 576 bytes, a check every 8 KB (14 rows): 11 slices.
        #expect(total >= 2, "\(format): the encoder asked the check \(total) times")
        for cancelAt in 1...max(1, total) {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = DecodeCancellationTests.thrown {
                _ = try ImageEncoder.encode(image, as: format, settings: EncoderSettings(), isCancelled: cancelling.check)
            }
            #expect(error == .cancelled, "\(format), cancel at call \(cancelAt) of \(total): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt)
        }
        #expect(try ImageEncoder.encode(image, as: format, settings: EncoderSettings()) == reference)
    }
}
