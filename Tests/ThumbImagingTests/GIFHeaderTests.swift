import Foundation
import Testing
@testable import ThumbImaging

/// What the GIF loader decides from the records before the first frame's pixels: the bounded
/// walk over extensions, the canvas (screen and first frame), the limits, the palette.
@Suite("GIF header and canvas")
struct GIFHeaderTests {
    static let redGreen: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 255, 0)]

    static func pillow(_ bytes: [UInt8]) throws -> PixelBuffer {
        let file = try GIFPillow.scratchFile(bytes)
        defer { try? FileManager.default.removeItem(at: file) }
        return try GIFPillow.firstFrameRGBA(file.path)
    }

    @Test("thousands of extension records and no image: refused at the bound, with or without a trailer")
    func extensionsWithoutImage() throws {
        let header = GIFBuilder.header(width: 4, height: 4, colors: Self.redGreen)
        let comments = (0..<5000).flatMap { _ in GIFBuilder.comment("x") }
        let bound = "GIF has more than \(GIFLoader.maxRecordsBeforeImage) extension records before its first image"
        #expect(imagingError { _ = try gifLoader(header + comments + GIFBuilder.trailer) } == .undecodable(reason: bound))
        #expect(imagingError { _ = try gifLoader(header + comments) } == .undecodable(reason: bound))
        // Under the bound, a file of extensions ends at its trailer or its end, saying so.
        let few = (0..<100).flatMap { _ in GIFBuilder.comment("x") }
        #expect(imagingError { _ = try gifLoader(header + few + GIFBuilder.trailer) }
            == .undecodable(reason: "GIF has no image: its trailer follows 100 extension record(s)"))
        let cut = imagingError { _ = try gifLoader(header + few) }
        #expect(cut == .undecodable(reason: "GIF record 101 (before any image): Failed to read from given file (the data ends at byte \(header.count + few.count))"))
        // And one extension of endless sub-blocks stops at its own bound.
        let blocks: [UInt8] = [0x21, 0xFE] + (0..<70_000).flatMap { _ -> [UInt8] in [1, 0x41] } + [0]
        #expect(imagingError { _ = try gifLoader(header + blocks + GIFBuilder.trailer) }
            == .undecodable(reason: "GIF has more than \(GIFLoader.maxSubBlocksBeforeImage) extension blocks before its first image"))
    }

    @Test("4000 extension records before the image are read through, the last GCE applying to the image")
    func manyExtensionsThenImage() throws {
        let header = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen)
        let records = (0..<4000).flatMap { index in index % 2 == 0 ? GIFBuilder.comment("c") : GIFBuilder.graphicControl(transparent: nil) }
        let bytes = header + records + GIFBuilder.graphicControl(transparent: 1)
            + GIFBuilder.image(left: 0, top: 0, width: 2, height: 1, indices: [0, 1]) + GIFBuilder.trailer
        let loader = try gifLoader(bytes)
        #expect(loader.frame.transparentIndex == 1)
        let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect(pixels.channels == 4 && pixels.bytes == [255, 0, 0, 255, 0, 0, 0, 0])
    }

    @Test("a first frame past the logical screen grows the canvas (Chromium, Pillow); uncovered pixels are transparent")
    func frameOutsideScreenGrowsCanvas() throws {
        // Screen 2x1; the frame 2x1 at (1, 0): index 1 (green) then 0 (red).
        let bytes = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen)
            + GIFBuilder.image(left: 1, top: 0, width: 2, height: 1, indices: [1, 0]) + GIFBuilder.trailer
        let loader = try gifLoader(bytes)
        #expect(loader.storedWidth == 3 && loader.storedHeight == 1)
        let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect(pixels.bytes == [0, 0, 0, 0, 0, 255, 0, 255, 255, 0, 0, 255])
        // Pillow grows the canvas alike and agrees on the frame's pixels; it paints the
        // uncovered one with colour 0 where a browser leaves it transparent.
        let pillow = try Self.pillow(bytes)
        #expect(pillow.width == 3 && pillow.height == 1)
        #expect(Array(pillow.bytes[4...]) == Array(pixels.bytes[4...]))
    }

    @Test("a zero-sized logical screen takes the first frame's size (as Chromium and Pillow); a zero-sized frame fails")
    func zeroSizes() throws {
        let bytes = GIFBuilder.header(width: 0, height: 0, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 2, height: 1, indices: [1, 1]) + GIFBuilder.trailer
        let loader = try gifLoader(bytes)
        #expect(loader.storedWidth == 2 && loader.storedHeight == 1)
        let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect(pixels.channels == 3 && pixels.bytes == [0, 255, 0, 0, 255, 0])
        #expect(try Self.pillow(bytes).bytes == pixels.withAlpha().bytes)

        let empty = GIFBuilder.header(width: 4, height: 4, colors: Self.redGreen)
            + GIFBuilder.image(left: 1, top: 2, width: 0, height: 3, indices: []) + GIFBuilder.trailer
        #expect(imagingError { _ = try gifLoader(empty) } == .undecodable(reason: "GIF: the first frame (0x3 at 1,2) has no pixels"))
    }

    @Test("the logical screen, the first frame and their canvas each meet the limits before any pixel buffer")
    func limitsFromTheHeader() throws {
        let huge = GIFBuilder.header(width: 65535, height: 65535, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 1, height: 1, indices: [0]) + GIFBuilder.trailer
        #expect(imagingError { _ = try gifLoader(huge) }
            == .tooLarge(reason: "GIF logical screen: 65535x65535 exceeds the 65500-pixel dimension limit"))
        let bigFrame = GIFBuilder.header(width: 10, height: 10, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 40000, height: 40000, indices: [0]) + GIFBuilder.trailer
        #expect(imagingError { _ = try gifLoader(bigFrame) }
            == .tooLarge(reason: "GIF first frame: 40000x40000 exceeds the 250000000-pixel limit"))
        let farFrame = GIFBuilder.header(width: 10, height: 10, colors: Self.redGreen)
            + GIFBuilder.image(left: 60000, top: 0, width: 6000, height: 1, indices: [0]) + GIFBuilder.trailer
        #expect(imagingError { _ = try gifLoader(farFrame) }
            == .tooLarge(reason: "GIF canvas of the 10x10 logical screen and the first frame (6000x1 at 60000,0): 66000x10 exceeds the 65500-pixel dimension limit"))
        var tight = ImageLimits()
        tight.maxDecoderMemoryBytes = 1000
        let small = GIFBuilder.header(width: 20, height: 20, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 1, height: 1, indices: [0]) + GIFBuilder.trailer
        #expect(imagingError { _ = try gifLoader(small, limits: tight) }
            == .tooLarge(reason: "GIF canvas 20x20 needs 1600 bytes, over the 1000-byte decoder memory limit"))
        #expect(throws: Never.self) { try gifLoader(small) }
    }

    @Test("an LZW code size over 11 is named, and a header cut short says where the data ends")
    func malformedDescriptors() throws {
        var bytes = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 2, height: 1, indices: [0, 1]) + GIFBuilder.trailer
        let codeSizeAt = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen).count + 10
        bytes[codeSizeAt] = 0x8F
        #expect(imagingError { _ = try gifLoader(bytes) } == .undecodable(reason: "GIF first frame: LZW minimum code size 143 is over 11 (browsers and GIF89a take at most 11 and 8)"))
        bytes[codeSizeAt] = 12
        #expect(imagingError { _ = try gifLoader(bytes) }
            == .undecodable(reason: "GIF first frame: LZW minimum code size 12 is over 11 (browsers and GIF89a take at most 11 and 8)"))
        let header = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen)
        #expect(imagingError { _ = try gifLoader(Array(header.prefix(9))) }
            == .undecodable(reason: "GIF header: No screen descriptor detected (the data ends at byte 9)"))
        #expect(imagingError { _ = try gifLoader(header + [0x2C, 0, 0, 0]) }
            == .undecodable(reason: "GIF first frame's descriptor: the data ends at byte \(header.count + 4)"))
    }

    /// Issue 26's second defect: giflib refuses a minimum code size over 8, Chromium (Skia's
    /// reader takes sizes below 12), Pillow and libvips decode it. A root code over 255 names
    /// index `code & 0xFF`, as Skia's byte-wide LZW suffixes make it.
    @Test("LZW minimum code sizes 9–11 decode as browsers show them", arguments: [9, 10, 11])
    func wideCodeSizes(_ codeSize: Int) throws {
        let (width, height) = (37, 61) // over 2000 codes at 11: a clear code mid-frame, rows across sub-blocks
        let indices = (0..<width * height).map { ($0 % width + $0 / width) % 2 }
        let roots = indices.enumerated().map { offset, index in offset % 7 == 3 ? index + 256 : index }
        let bytes = GIFBuilder.header(width: width, height: height, colors: Self.redGreen)
            + [0x2C] + GIFBuilder.word(0) + GIFBuilder.word(0) + GIFBuilder.word(width) + GIFBuilder.word(height) + [0]
            + GIFBuilder.wideLZWBlocks(roots, codeSize: codeSize) + GIFBuilder.trailer
        let frame = try gifLoader(bytes).load(maxShrink: 1, isCancelled: nil)
        #expect(frame.warning == nil)
        #expect(frame.pixels.width == width && frame.pixels.height == height && frame.pixels.channels == 3)
        let expected = indices.flatMap { $0 == 0 ? [255, 0, 0] : [0, 255, 0] as [UInt8] }
        #expect(frame.pixels.bytes == expected)
        // Cut inside the LZW data: the rows before the cut, the rest transparent, and why.
        let cut = try gifLoader(Array(bytes.prefix(bytes.count * 2 / 3))).load(maxShrink: 1, isCancelled: nil)
        #expect(cut.pixels.channels == 4)
        #expect(cut.warning?.contains("LZW minimum code size \(codeSize)") == true, "\(cut.warning ?? "no warning")")
    }

    @Test("colour indices past the map are opaque black, and a file without any map reads indices as grey, as in Pillow")
    func palettes() throws {
        let pastTheMap = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen)
            + GIFBuilder.image(left: 0, top: 0, width: 2, height: 1, indices: [200, 1]) + GIFBuilder.trailer
        let mapped = try gifLoader(pastTheMap).load(maxShrink: 1, isCancelled: nil).pixels
        #expect(mapped.bytes == [0, 0, 0, 0, 255, 0])
        #expect(try Self.pillow(pastTheMap).bytes == mapped.withAlpha().bytes)

        let noMap = GIFBuilder.header(width: 3, height: 1, colors: nil)
            + GIFBuilder.image(left: 0, top: 0, width: 3, height: 1, indices: [200, 1, 0]) + GIFBuilder.trailer
        let grey = try gifLoader(noMap).load(maxShrink: 1, isCancelled: nil).pixels
        #expect(grey.bytes == [200, 200, 200, 1, 1, 1, 0, 0, 0])
        #expect(try Self.pillow(noMap).bytes == grey.withAlpha().bytes)

        // A transparent index past the map is still transparent (Pillow agrees).
        let transparentPast = GIFBuilder.header(width: 2, height: 1, colors: Self.redGreen) + GIFBuilder.graphicControl(transparent: 3)
            + GIFBuilder.image(left: 0, top: 0, width: 2, height: 1, indices: [3, 1]) + GIFBuilder.trailer
        let clear = try gifLoader(transparentPast).load(maxShrink: 1, isCancelled: nil).pixels
        #expect(clear.bytes == [0, 0, 0, 0, 0, 255, 0, 255])
        #expect(GIFPixels.differingPixels(try Self.pillow(transparentPast), clear) == 0)
    }
}
