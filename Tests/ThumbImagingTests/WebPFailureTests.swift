import Foundation
import Testing
@testable import ThumbImaging

/// WebP decodes that stop: cancelled between input slices, refused from the header (limits),
/// truncated and damaged files.
@Suite("WebP cancellation, limits and damage")
struct WebPFailureTests {
    static func bytes(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }

    static func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static func riff(_ chunks: [UInt8]) -> [UInt8] { Array("RIFF".utf8) + le32(4 + chunks.count) + Array("WEBP".utf8) + chunks }

    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        Array(fourCC.utf8) + le32(payload.count) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    @Test("a big WebP's decode asks the check between input slices and stops at the first true")
    func cancelsBetweenSlices() throws {
        let path = try WebPFixtures.largeLossy()
        let size = try Self.bytes(path).count
        let slices = (size + WebPLoader.sliceBytes - 1) / WebPLoader.sliceBytes
        let counting = CountingCheck()
        let loader = try WebPLoader(source: loadSource(path), limits: ImageLimits())
        let reference = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect(try loader.load(maxShrink: 1, isCancelled: counting.check).pixels == reference)
        // One check before every slice but the first: a 1 MB file is not one uninterruptible call.
        #expect(counting.calls == slices - 1 && slices > 10, "\(size) bytes, \(slices) slices, \(counting.calls) checks")
        for cancelAt in [1, 2, slices / 2, slices - 1] {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = WebPFixtures.thrown { () throws(ImagingError) in try loader.load(maxShrink: 1, isCancelled: cancelling.check) }
            #expect(error == .cancelled, "cancel at \(cancelAt) of \(slices - 1): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt)
        }
        #expect(try loader.load(maxShrink: 1, isCancelled: nil).pixels == reference, "a cancelled decode left state behind")
    }

    @Test("a render of a big WebP cancels at every checkpoint, and renders the same afterwards")
    func renderCancels() throws {
        let source = try loadSource(try WebPFixtures.largeLossy())
        let request = try Sample.request("contact-avatar@3x")
        let reference = try Thumbnailer().render(source, request: request).pixels
        let counting = CountingCheck()
        #expect(try Thumbnailer().render(source, request: request, isCancelled: counting.check).pixels == reference)
        let total = counting.calls
        try #require(total > 10)
        for cancelAt in Set([1, 2, 3, total / 2, total - 1, total]).sorted() {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = WebPFixtures.thrown { () throws(ImagingError) in
                try Thumbnailer().render(source, request: request, isCancelled: cancelling.check)
            }
            #expect(error == .cancelled, "cancel at \(cancelAt) of \(total): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt)
        }
        #expect(try Thumbnailer().render(source, request: request).pixels == reference)
    }

    /// Headers written here: a VP8L (lossless) one of 16383x16383 (268 MP, the largest VP8L can
    /// declare), a VP8 (lossy) key frame of the same size, an animation's VP8X canvas of
    /// 30000x30000. None carries image data, so only a check of the header can answer tooLarge:
    /// a decode would fail for want of data (undecodable).
    static let oversizedHeaders: [(String, [UInt8])] = [
        ("VP8L 16383x16383", riff(chunk("VP8L", [0x2F] + le32(16382 | 16382 << 14) + [0, 0, 0]))),
        ("VP8 16383x16383", riff(chunk("VP8 ", [0x10, 0x00, 0x00, 0x9D, 0x01, 0x2A, 0xFF, 0x3F, 0xFF, 0x3F] + [UInt8](repeating: 0, count: 16)))),
        ("VP8X animated 30000x30000", riff(chunk("VP8X", [0x02, 0, 0, 0] + Array(le32(29999).prefix(3)) + Array(le32(29999).prefix(3)))
                                          + chunk("ANIM", [0, 0, 0, 0, 0, 0]))),
    ]

    @Test("a header declaring more than maxPixels is refused as tooLarge by the loader and the thumbnailer",
          arguments: oversizedHeaders.map(\.0))
    func oversizedHeader(_ name: String) throws {
        let bytes = try #require(Self.oversizedHeaders.first { $0.0 == name }?.1)
        let error = WebPFixtures.thrown { () throws(ImagingError) in try WebPLoader(source: SourceBytes(bytes), limits: ImageLimits()) }
        guard case .tooLarge(let reason)? = error else {
            Issue.record("\(name): \(String(describing: error))")
            return
        }
        #expect(reason.contains("250000000-pixel limit"), "\(reason)")
        let rendered = WebPFixtures.thrown { () throws(ImagingError) in
            try Thumbnailer().thumbnail(of: SourceBytes(bytes), request: try! Sample.request("large"))
        }
        #expect(rendered == error)
        // With a limit above it, the same bytes get as far as the decoder, which finds no data.
        var roomy = ImageLimits()
        roomy.maxPixels = 1 << 40
        roomy.maxDimension = 1 << 20
        roomy.maxDecoderMemoryBytes = 1 << 40
        let decoded = WebPFixtures.thrown { () throws(ImagingError) in
            try WebPLoader(source: SourceBytes(bytes), limits: roomy).load(maxShrink: 1000, isCancelled: nil)
        }
        guard case .undecodable? = decoded else {
            Issue.record("\(name) under a roomy limit: \(String(describing: decoded))")
            return
        }
    }

    @Test("limits below a real file's size refuse it from the header: pixels, dimension, lossless decoder memory")
    func lowLimits() throws {
        let flower = try loadSource(Paths.corpusFile("formats/webp", "pillow__flower.webp"))
        var limits = ImageLimits()
        limits.maxPixels = 480 * 360 - 1
        #expect(throws: ImagingError.tooLarge(reason: "480x360 exceeds the 172799-pixel limit")) {
            try WebPLoader(source: flower, limits: limits)
        }
        limits = ImageLimits()
        limits.maxDimension = 479
        #expect(throws: ImagingError.tooLarge(reason: "480x360 exceeds the 479-pixel dimension limit")) {
            try WebPLoader(source: flower, limits: limits)
        }
        let lossless = try loadSource(try WebPFixtures.largeLosslessAlpha())
        limits = ImageLimits()
        limits.maxDecoderMemoryBytes = 1600 * 1200 * 4 - 1
        let error = WebPFixtures.thrown { () throws(ImagingError) in try WebPLoader(source: lossless, limits: limits) }
        #expect(error == .tooLarge(reason: "a 1600x1200 lossless WebP needs 7680000 bytes of decoder memory, over the 7679999-byte limit"))
        limits.maxDecoderMemoryBytes = 1600 * 1200 * 4
        let frame = try WebPLoader(source: lossless, limits: limits).load(maxShrink: 4, isCancelled: nil)
        #expect(frame.pixels.width == 400 && frame.pixels.height == 300)
    }

    @Test("a truncated WebP keeps the rows libwebp delivered, grey below, with a warning that counts them")
    func truncated() throws {
        let whole = try Self.bytes(Paths.corpusFile("formats/webp", "pillow__flower.webp"))
        let full = try WebPLoader(source: SourceBytes(whole), limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil).pixels
        // The VP8 chunk runs from byte 30 to 21872: cut it at about two thirds.
        let cut = Array(whole.prefix(15_000))
        let frame = try WebPLoader(source: SourceBytes(cut), limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        let warning = try #require(frame.warning)
        #expect(warning.contains("VP8_STATUS_SUSPENDED") && warning.contains("of 360 rows decoded"), "\(warning)")
        let rows = try #require(Int(warning.split(separator: ":").last!.split(separator: " ").first!))
        #expect(rows > 16 && rows < 360, "\(warning)")
        let rowBytes = full.rowBytes
        let top = Pixels.meanAbsoluteError(Array(frame.pixels.bytes.prefix(rows * rowBytes)), channelsA: 3,
                                           Array(full.bytes.prefix(rows * rowBytes)), channelsB: 3)
        #expect(top == 0, "the delivered rows differ from a whole decode's by \(top)")
        #expect(frame.pixels.bytes[(rows * rowBytes)...].allSatisfy { $0 == 128 }, "the rows not delivered are not grey")
        // The thumbnailer passes the warning on.
        let rendered = try Thumbnailer().render(SourceBytes(cut), request: Sample.request("large"))
        #expect(rendered.warning == warning)
    }

    @Test("a WebP cut before any row, or inside its header, is undecodable with libwebp's status",
          arguments: [(25, "VP8_STATUS_NOT_ENOUGH_DATA"), (45, "VP8_STATUS_SUSPENDED"), (200, "VP8_STATUS_SUSPENDED")])
    func truncatedEarly(_ length: Int, _ status: String) throws {
        let cut = Array(try Self.bytes(Paths.corpusFile("formats/webp", "pillow__flower.webp")).prefix(length))
        let error = WebPFixtures.thrown { () throws(ImagingError) in
            try Thumbnailer().render(SourceBytes(cut), request: try! Sample.request("large"))
        }
        guard case .undecodable(let reason)? = error else {
            Issue.record("cut at \(length): \(String(describing: error))")
            return
        }
        #expect(reason.contains(status) && !reason.contains("\n"), "cut at \(length): \(reason)")
    }

    @Test("damaged data is undecodable, naming libwebp's VP8StatusCode")
    func damaged() throws {
        // The VP8 start code (9D 01 2A, after the 3-byte frame tag) of flower.webp.
        var lossy = try Self.bytes(Paths.corpusFile("formats/webp", "pillow__flower.webp"))
        try #require(lossy[41] == 0x9D)
        lossy[41] = 0
        // Inside the first Huffman codes of a lossless file.
        var lossless = try Self.bytes(try WebPFixtures.largeLosslessAlpha())
        for index in 40..<200 { lossless[index] = 0xFF }
        for (name, bytes) in [("lossy start code", lossy), ("lossless codes", lossless)] {
            let error = WebPFixtures.thrown { () throws(ImagingError) in
                try Thumbnailer().render(SourceBytes(bytes), request: try! Sample.request("large"))
            }
            guard case .undecodable(let reason)? = error else {
                Issue.record("\(name): \(String(describing: error))")
                continue
            }
            #expect(reason.contains("VP8_STATUS_BITSTREAM_ERROR"), "\(name): \(reason)")
        }
    }
}
