import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The GIF loader's row decoding: interlaced passes, data that ends early, cancellation.
@Suite("GIF decoding")
struct GIFDecodeTests {
    static let hopperPath = Paths.corpusFile("formats/gif", "pillow__hopper.gif")
    static let textMonoPath = Paths.corpusFile("formats/gif", "pillow__text_mono.gif")
    static let colorsPath = Paths.corpusFile("formats/gif", "pillow__test.colors.gif")

    static func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test("the interlaced row order visits every row once, for every height", arguments: Array(1...41))
    func interlacedRowsArePermutation(_ height: Int) {
        let rows = (0..<height).map { GIFLoader.interlacedRow($0, height: height) }
        #expect(rows.sorted() == Array(0..<height), "height \(height): \(rows)")
        #expect(rows.first == 0)
        if height > 8 { #expect(rows[1] == 8) }
    }

    @Test("an interlaced GIF Pillow wrote (odd sizes, four passes) decodes to Pillow's pixels, as does its plain twin")
    func pillowInterlacedMatches() throws {
        let folder = try ScratchDirectory("gif")
        defer { folder.remove() }
        let script = """
            import sys
            from PIL import Image
            im = Image.new('RGB', (61, 37))
            im.putdata([((x * 4) % 256, (y * 7) % 256, ((x ^ y) * 5) % 256) for y in range(37) for x in range(61)])
            im = im.quantize(colors=200)
            im.save(sys.argv[1] + '/interlaced.gif', interlace=True)
            im.save(sys.argv[1] + '/plain.gif', interlace=False)
            """
        _ = try Python.run(script, [folder.path])
        for (name, interlaced) in [("interlaced.gif", true), ("plain.gif", false)] {
            let path = folder.path(name)
            let loader = try GIFLoader(source: loadSource(path), limits: ImageLimits())
            #expect(loader.frame.interlaced == interlaced, "\(name)")
            let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
            #expect(pixels.channels == 3)
            #expect(GIFPixels.differingPixels(pixels, try GIFPillow.firstFrameRGBA(path)) == 0, "\(name)")
        }
    }

    /// Rows of `pixels` (frame = canvas) that equal `reference`, and rows that are all transparent.
    static func rowKinds(_ pixels: PixelBuffer, _ reference: PixelBuffer) -> (same: Set<Int>, transparent: Set<Int>) {
        let rgba = pixels.withAlpha(), full = reference.withAlpha()
        var same = Set<Int>(), transparent = Set<Int>()
        for y in 0..<rgba.height {
            let row = (y * rgba.width * 4)..<((y + 1) * rgba.width * 4)
            if rgba.bytes[row] == full.bytes[row] { same.insert(y) }
            if stride(from: row.lowerBound + 3, to: row.upperBound, by: 4).allSatisfy({ rgba.bytes[$0] == 0 }) { transparent.insert(y) }
        }
        return (same, transparent)
    }

    @Test("data that ends inside the frame keeps the rows decoded before it (interlaced: pass by pass), the rest transparent, with a warning",
          arguments: [hopperPath, textMonoPath])
    func truncatedFrameKeepsRows(_ path: String) throws {
        let whole = try Self.bytes(path)
        let reference = try GIFLoader(source: SourceBytes(whole), limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil).pixels
        // Where the LZW sub-blocks start (after the code size), as Pillow says: its tile's offset.
        let offsetText = try Python.run("import sys; from PIL import Image; print(Image.open(sys.argv[1]).tile[0][2])", [path])
        let dataStart = try #require(Int(String(decoding: offsetText, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        // giflib reads the LZW data a sub-block (256 bytes) at a time: cut a third and two thirds
        // of the way through them, partway into a block.
        let blocks = (whole.count - dataStart) / 256
        var lastRows = 0
        for completeBlocks in [blocks / 3, 2 * blocks / 3] {
            let cut = Array(whole.prefix(dataStart + completeBlocks * 256 + 100))
            let loader = try gifLoader(cut)
            let frame = try loader.load(maxShrink: 1, isCancelled: nil)
            let warning = try #require(frame.warning, "cut at \(cut.count) bytes: no warning")
            let height = loader.frame.height
            let match = try #require(warning.firstMatch(of: /truncated: (\d+) of (\d+) rows decoded/), "\(warning)")
            let rows = try #require(Int(match.1))
            #expect(Int(match.2) == height)
            #expect(warning.contains("the data ends at byte \(cut.count)") && !warning.contains("\n"), "\(warning)")
            #expect(rows > lastRows && rows < height, "cut at \(cut.count): \(rows) rows")
            lastRows = rows
            // The decoded rows (in file order: pass by pass when interlaced) are the whole file's.
            let decoded = Set((0..<rows).map { loader.frame.interlaced ? GIFLoader.interlacedRow($0, height: height) : $0 })
            let kinds = Self.rowKinds(frame.pixels, reference)
            #expect(frame.pixels.channels == 4)
            #expect(decoded.isSubset(of: kinds.same), "cut at \(cut.count): decoded rows differ from the full decode")
            #expect(Set(0..<height).subtracting(decoded).isSubset(of: kinds.transparent), "cut at \(cut.count): undecoded rows not transparent")
        }
        #expect(try GIFLoader(source: SourceBytes(whole), limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil).warning == nil)
    }

    @Test("the warning reaches the thumbnail; data that ends before any row fails with giflib's reason")
    func truncationThroughTheThumbnailer() throws {
        let whole = try Self.bytes(Self.hopperPath)
        let thumbnail = try Thumbnailer().thumbnail(of: SourceBytes(whole.prefix(whole.count / 2)), request: Sample.request("large"))
        #expect(thumbnail.warning?.contains("rows decoded") == true, "\(thumbnail.warning ?? "no warning")")
        #expect(thumbnail.format == .png, "the undecoded rows are transparent")

        let header = GIFBuilder.header(width: 4, height: 4, colors: [(255, 0, 0), (0, 255, 0)])
        let image = GIFBuilder.image(left: 0, top: 0, width: 4, height: 4, indices: [UInt8](repeating: 1, count: 16))
        // The descriptor (10 bytes), the code size and the first sub-block's length: no pixel data.
        let cut = header + image.prefix(12)
        let error = imagingError { _ = try gifLoader(cut).load(maxShrink: 1, isCancelled: nil) }
        #expect(error == .undecodable(reason: "GIF first frame (4x4, no row decoded): Failed to read from given file (the data ends at byte \(cut.count))"))
        // An LZW end code before the last row: giflib's "EOF too soon".
        let early = header + [0x2C] + GIFBuilder.word(0) + GIFBuilder.word(0) + GIFBuilder.word(4) + GIFBuilder.word(4) + [0]
            + GIFBuilder.lzwBlocks([UInt8](repeating: 1, count: 6)) + GIFBuilder.trailer
        let frame = try gifLoader(early).load(maxShrink: 1, isCancelled: nil)
        #expect(frame.warning == "GIF first frame truncated: 1 of 4 rows decoded, the rest transparent: Image EOF detected before image complete")
    }

    @Test("nothing after the first frame is read: 3000 more frames, then bytes that are no GIF, change nothing")
    func stopsAfterTheFirstFrame() throws {
        let header = GIFBuilder.header(width: 2, height: 2, colors: [(255, 0, 0), (0, 255, 0)])
        let first = GIFBuilder.graphicControl(transparent: nil) + GIFBuilder.image(left: 0, top: 0, width: 2, height: 2, indices: [0, 1, 1, 0])
        let later = (0..<3000).flatMap { _ in GIFBuilder.graphicControl(transparent: 0) + GIFBuilder.image(left: 1, top: 1, width: 1, height: 1, indices: [0]) }
        let junk = [UInt8](repeating: 0xFF, count: 1 << 20)
        let alone = try gifLoader(header + first + GIFBuilder.trailer).load(maxShrink: 1, isCancelled: nil)
        let animation = try gifLoader(header + first + later + junk).load(maxShrink: 1, isCancelled: nil)
        #expect(alone.warning == nil && animation.warning == nil, "\(animation.warning ?? "")")
        #expect(animation.pixels == alone.pixels)
        #expect(alone.pixels.bytes == [255, 0, 0, 0, 255, 0, 0, 255, 0, 255, 0, 0])
    }

    @Test("the loader asks the cancellation check every 32 rows and stops at the first true")
    func loaderCancels() throws {
        let source = try loadSource(Self.colorsPath) // 807x606: 19 slices of 32 rows
        let counting = CountingCheck()
        let reference = try GIFLoader(source: source, limits: ImageLimits()).load(maxShrink: 1, isCancelled: counting.check)
        #expect(counting.calls == 19)
        #expect(try GIFLoader(source: source, limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil).pixels == reference.pixels)
        for cancelAt in [1, 2, 10, 19] {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let loader = try GIFLoader(source: source, limits: ImageLimits())
            let error = imagingError { _ = try loader.load(maxShrink: 1, isCancelled: cancelling.check) }
            #expect(error == .cancelled, "cancel at call \(cancelAt): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt)
        }
    }

    @Test("a render cancels at any of its checks, and renders the same afterwards")
    func renderCancels() throws {
        let source = try loadSource(Self.colorsPath)
        let request = try Sample.request("large")
        let reference = try Thumbnailer().render(source, request: request).pixels
        let counting = CountingCheck()
        #expect(try Thumbnailer().render(source, request: request, isCancelled: counting.check).pixels == reference)
        let total = counting.calls
        #expect(total >= 19 + 2, "the render asked \(total) times")
        for cancelAt in Set([1, 2, 3, total / 2, total - 1, total]).sorted() {
            let cancelling = CountingCheck(cancelAt: cancelAt)
            let error = imagingError { _ = try Thumbnailer().render(source, request: request, isCancelled: cancelling.check) }
            #expect(error == .cancelled, "cancel at call \(cancelAt) of \(total): \(String(describing: error))")
            #expect(cancelling.calls == cancelAt)
        }
        #expect(try Thumbnailer().render(source, request: request).pixels == reference)
    }
}
