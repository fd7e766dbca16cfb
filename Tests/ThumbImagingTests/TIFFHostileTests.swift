import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Hostile TIFFs written here byte by byte: the limits hold before any pixel buffer exists,
/// and a damaged file ends as a warning or an `ImagingError`, never a crash.
@Suite("TIFF: hostile files, truncation, cancellation")
struct TIFFHostileTests {
    typealias Entry = (tag: UInt16, type: UInt16, count: UInt32, value: UInt32)
    static let (short, long) = (TIFFTestSupport.short, TIFFTestSupport.long)

    /// A grey page of `width` × `height`, its one strip (or tile) of 64 bytes at the end of the file.
    static func greyPage(width: UInt32, height: UInt32, bits: UInt32 = 8, extra: [Entry] = [], tiled: Bool = false) -> [UInt8] {
        var entries: [Entry] = [(256, long, 1, width), (257, long, 1, height), (258, short, 1, bits), (259, short, 1, 1),
                                (262, short, 1, 1)] + extra
        let offset = TIFFTestSupport.trailingOffset(entryCount: entries.count + (tiled ? 2 : 3))
        entries += tiled ? [(324, long, 1, offset), (325, long, 1, 64)]
                         : [(273, long, 1, offset), (278, long, 1, height), (279, long, 1, 64)]
        return TIFFTestSupport.tiff(entries, trailing: Array(repeating: 0x80, count: 64))
    }

    /// What the loader and a render do with `bytes`, timed.
    static func outcome(_ bytes: [UInt8]) throws -> (result: Result<RenderedImage, ImagingError>, seconds: Double) {
        let request = try TIFFTestSupport.request(width: 256, height: 256)
        let clock = ContinuousClock()
        let started = clock.now
        let result = Result { () throws(ImagingError) in try Thumbnailer().render(SourceBytes(bytes), request: request) }
        let elapsed = clock.now - started
        return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test("the writer's plain page renders: the hostile ones below differ only in their bombs")
    func plainPageRenders() throws {
        let image = try Self.outcome(Self.greyPage(width: 8, height: 8)).result.get()
        #expect(image.pixels.width == 8 && image.pixels.height == 8)
        #expect(Pixels.rgb(image.pixels, x: 3, y: 3).g == 0x80)
    }

    @Test("huge declared sides: tooLarge before any pixel", arguments: [(100_000, 10), (60_000, 60_000), (65_000, 5_000)])
    func hugeSides(_ sides: (UInt32, UInt32)) throws {
        let outcome = try Self.outcome(Self.greyPage(width: sides.0, height: sides.1))
        guard case .failure(.tooLarge(let reason)) = outcome.result else {
            Issue.record("\(sides): \(outcome.result)")
            return
        }
        #expect(reason.contains("\(sides.0)x\(sides.1)"))
        #expect(outcome.seconds < 0.5)
    }

    @Test("a 1x1 page with 8192x8192 16-bit tiles (128 MB each): refused before the tile is allocated")
    func hugeTile() throws {
        let bytes = Self.greyPage(width: 1, height: 1, bits: 16, extra: [(322, Self.long, 1, 8192), (323, Self.long, 1, 8192)], tiled: true)
        let outcome = try Self.outcome(bytes)
        guard case .failure(.tooLarge(let reason)) = outcome.result else {
            Issue.record("\(outcome.result)")
            return
        }
        #expect(reason.contains("tile"), "\(reason)")
        #expect(outcome.seconds < 0.5)
    }

    @Test("more tiles than any real page (8x8 tiles over 10000x10000: 1.56 million): refused quickly")
    func tileCount() throws {
        let bytes = Self.greyPage(width: 10_000, height: 10_000, extra: [(322, Self.long, 1, 8), (323, Self.long, 1, 8)], tiled: true)
        let outcome = try Self.outcome(bytes)
        guard case .failure = outcome.result else {
            Issue.record("rendered: \(outcome.result)")
            return
        }
        #expect(outcome.seconds < 1)
    }

    @Test("a 1x1 page whose strip tags claim 2^20 strips: a clean result, quickly")
    func stripCount() throws {
        var bytes = Self.greyPage(width: 1, height: 1)
        // StripOffsets and StripByteCounts (entries 5 and 7 after sorting) declare 2^20 values.
        for entry in 0..<8 {
            let at = 10 + entry * 12
            let tag = UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
            if tag == 273 || tag == 279 { bytes.replaceSubrange(at + 4..<at + 8, with: TIFFTestSupport.le32(1 << 20)) }
        }
        let outcome = try Self.outcome(bytes)
        if case .success(let image) = outcome.result { #expect(image.pixels.width == 1) }
        #expect(outcome.seconds < 1)
    }

    @Test("a strip-per-row page declaring 65000 strips past the end of the file: an error, quickly")
    func stripsPastTheEnd() throws {
        let bytes = Self.greyPage(width: 1, height: 65_000, extra: [])
        let outcome = try Self.outcome(bytes)
        #expect(outcome.seconds < 2)
        if case .success(let image) = outcome.result { #expect(image.warning != nil, "the missing rows went unmentioned") }
    }

    @Test("a real file cut in half: a warning or an ImagingError, never a crash", arguments: [0.5, 0.9, 0.1])
    func truncated(_ fraction: Double) throws {
        let scratch = try ScratchDirectory("tiff-truncated")
        defer { scratch.remove() }
        for (name, options) in [("strips.tif", ["--compression", "lzw"]), ("tiles.tif", ["--tile", "--compression", "jpeg"])] {
            let path = scratch.path(name)
            try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo, path] + options)
            let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let cut = Array(whole.prefix(Int(Double(whole.count) * fraction)))
            switch try Self.outcome(cut).result {
            case .success(let image): #expect(image.warning != nil, "\(name) cut to \(cut.count) bytes rendered without a warning")
            case .failure(let error): #expect(!error.description.isEmpty)
            }
        }
    }

    @Test("cancellation: before the decode, and between strips")
    func cancellation() throws {
        let scratch = try ScratchDirectory("tiff-cancel")
        defer { scratch.remove() }
        let path = scratch.path("strips.tif")
        try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo, path, "--compression", "lzw"])
        let source = try loadSource(path)
        #expect(throws: ImagingError.cancelled) {
            _ = try Thumbnailer().render(source, request: Sample.request("large"), isCancelled: { true })
        }
        // True from the fifth question on: the loader asks between strips (1976 rows, 128 a strip).
        let asked = Counter()
        #expect(throws: ImagingError.cancelled) {
            let loader = try TIFFLoader(source: source, limits: ImageLimits())
            _ = try loader.load(maxShrink: 1, isCancelled: { asked.next() > 4 })
        }
        #expect(asked.value >= 5)
    }
}

/// A thread-safe count of cancellation questions (TIFF and JPEG XL tests).
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func next() -> Int { lock.withLock { count += 1; return count } }
}
