import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The GIF rows of the formats manifest: every OK file's first frame as Pillow composites it,
/// at the right size for three kinds; every ERROR file refused from its header.
@Suite("GIF corpus")
struct GIFTests {
    static let kinds = ["contact-avatar@3x", "product-grid@3x", "large"]
    /// Mean absolute error over white, 0–255, of a thumbnail against Pillow's Lanczos resize of
    /// the same first frame. Measured: 0 for the files no kind resizes, 0.04 at most for the
    /// others (test.colors.gif, chi.gif); the bound leaves room for the resamplers' rounding,
    /// not for a wrong palette, offset or alpha.
    static let maxMeanAbsoluteError = 1.0

    @Test("the manifest lists the corpus's twelve GIFs: ten OK, two ERROR")
    func manifestIsPresent() throws {
        let entries = try GIFCorpus.entries()
        #expect(entries.count == 12, "\(entries.count) GIF rows")
        #expect(try GIFCorpus.with(status: "OK").count == 10)
        #expect(try GIFCorpus.with(status: "ERROR").count == 2)
    }

    @Test("an OK file's canvas is Pillow's first frame, pixel for pixel (alpha exactly, colour where visible)",
          arguments: try GIFCorpus.with(status: "OK"))
    func canvasIsPillowsFirstFrame(_ entry: CorpusManifest.Row) throws {
        let loader = try GIFLoader(source: loadSource(entry.path), limits: ImageLimits())
        #expect(loader.storedWidth == entry.width && loader.storedHeight == entry.height,
                "manifest says \(entry.width ?? 0)x\(entry.height ?? 0), loader \(loader.storedWidth)x\(loader.storedHeight)")
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.warning == nil, "\(frame.warning ?? "")")
        #expect(frame.iccProfile == nil)
        let pillow = try GIFPillow.firstFrameRGBA(entry.path)
        try #require(pillow.width == frame.pixels.width && pillow.height == frame.pixels.height)
        #expect(GIFPixels.differingPixels(frame.pixels, pillow) == 0)
        // RGBA exactly when some pixel is transparent.
        #expect(frame.pixels.hasAlpha == pillow.hasTransparency,
                "\(frame.pixels.channels) channels; Pillow has transparency: \(pillow.hasTransparency)")
    }

    @Test("an OK file renders for three kinds at the expected size, close to Pillow's resize of its first frame",
          arguments: try GIFCorpus.with(status: "OK"))
    func okFileRenders(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        let width = try #require(entry.width), height = try #require(entry.height)
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            let pixelSlot = request.kind.pixelSize(scale: request.scale)
            let expected = ExpectedSize.of(sourceWidth: width, sourceHeight: height, slotWidth: pixelSlot.width,
                                           slotHeight: pixelSlot.height, fill: request.kind.mode == .fill)
            let thumbnail = try Thumbnailer().thumbnail(of: source, request: request)
            #expect(thumbnail.width == expected.width && thumbnail.height == expected.height,
                    "\(slot): expected \(expected.width)x\(expected.height), got \(thumbnail.width)x\(thumbnail.height)")
            #expect(thumbnail.warning == nil)
            let rendered = try Thumbnailer().render(source, request: request)
            #expect(rendered.sourceWidth == width && rendered.sourceHeight == height)
            guard request.kind.mode == .fit else { continue } // a fill crops: its geometry is tested elsewhere
            let pillow = try Python.pillowResized(entry.path, width: expected.width, height: expected.height, mode: "RGBA")
            let reference = PixelBuffer(width: expected.width, height: expected.height, channels: 4, bytes: pillow)
            let error = Pixels.meanAbsoluteError(GIFPixels.overWhite(rendered.pixels), channelsA: 3,
                                                 GIFPixels.overWhite(reference), channelsB: 3)
            print("GIF MAE \(entry.file) @ \(slot) \(expected.width)x\(expected.height): \(String(format: "%.3f", error))")
            #expect(error < Self.maxMeanAbsoluteError, "\(slot): mean absolute error \(error) against Pillow")
        }
    }

    @Test("transparency is kept: transparent.gif and first_frame_transparency.gif render with alpha, as PNG")
    func transparencyIsKept() throws {
        for file in ["pillow__transparent.gif", "pillow__first_frame_transparency.gif"] {
            let source = try loadSource(Paths.corpusFile("formats/gif", file))
            let rendered = try Thumbnailer().render(source, request: Sample.request("large"))
            #expect(rendered.pixels.hasTransparency, "\(file)")
            let thumbnail = try Thumbnailer().thumbnail(of: source, request: Sample.request("large"))
            #expect(thumbnail.format == .png, "\(file): \(thumbnail.format)")
        }
        // The first frame of first_frame_transparency.gif is 50x50 at (25, 0) on a 75x50 screen
        // and names index 1 transparent: the 25 columns left of it stay transparent too.
        let loader = try GIFLoader(source: loadSource(Paths.corpusFile("formats/gif", "pillow__first_frame_transparency.gif")),
                                   limits: ImageLimits())
        #expect(loader.frame == GIFLoader.FirstFrame(left: 25, top: 0, width: 50, height: 50, interlaced: true, transparentIndex: 1))
        let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect((0..<50).allSatisfy { y in (0..<25).allSatisfy { x in Pixels.rgb(pixels, x: x, y: y).a == 0 } })
    }

    @Test("a GCE's transparent index that no first-frame pixel uses gives RGB (chi.gif), as do opaque files")
    func unusedTransparentIndexIsOpaque() throws {
        let loader = try GIFLoader(source: loadSource(Paths.corpusFile("formats/gif", "pillow__chi.gif")), limits: ImageLimits())
        #expect(loader.frame.transparentIndex == 255)
        #expect(try loader.load(maxShrink: 1, isCancelled: nil).pixels.channels == 3)
        let hopper = try GIFLoader(source: loadSource(Paths.corpusFile("formats/gif", "pillow__hopper.gif")), limits: ImageLimits())
        #expect(try hopper.load(maxShrink: 1, isCancelled: nil).pixels.channels == 3)
    }

    @Test("ERROR files fail from the header, before any pixel buffer: zero_width undecodable, decompression_bomb too large")
    func errorFilesFailFromTheHeader() throws {
        let expected: [String: (ImagingError) -> Bool] = [
            "pillow__zero_width.gif": { if case .undecodable = $0 { true } else { false } },
            "pillow__decompression_bomb.gif": { if case .tooLarge = $0 { true } else { false } },
        ]
        for entry in try GIFCorpus.with(status: "ERROR") {
            let bytes = try loadSource(entry.path)
            // The loader's init reads the header and the first frame's descriptor only; it
            // never allocates pixels (load does), so failing there is failing without a buffer.
            let error = imagingError { _ = try GIFLoader(source: bytes, limits: ImageLimits()) }
            let matches = try #require(expected[entry.file], "no expectation for \(entry.file)")
            #expect(error.map(matches) == true, "\(entry.file): \(String(describing: error))")
            let reason = error.map { "\($0)" } ?? ""
            #expect(!reason.contains("\n") && reason.contains("GIF"), "\(entry.file): \(reason)")
            // The public path says the same.
            let request = try Sample.request("large")
            let viaThumbnailer = imagingError { _ = try Thumbnailer().thumbnail(of: bytes, request: request) }
            #expect(viaThumbnailer == error)
        }
        let bombBytes = try loadSource(Paths.corpusFile("formats/gif", "pillow__decompression_bomb.gif"))
        let bomb = imagingError { _ = try GIFLoader(source: bombBytes, limits: ImageLimits()) }
        // 65535x1321 at (0, 65280) on a 32x32 screen: refused for its own width first.
        #expect(bomb == .tooLarge(reason: "GIF first frame: 65535x1321 exceeds the 65500-pixel dimension limit"))
    }
}
