import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Larger TIFFs made here from a corpus photo (4608x1976) with libvips: a pyramid (shrink-on-load
/// from its reduced pages), striped LZW and tiled JPEG, each rendered like `vips thumbnail`.
@Suite("TIFF: pyramids and photos against libvips")
struct TIFFPyramidTests {
    /// The pages of `path` as tiffinfo lists them: (width, height, reduced-resolution).
    static func pages(_ path: String) throws -> [(width: Int, height: Int, reduced: Bool)] {
        let text = try TIFFTestSupport.run("tiffinfo", [path]).stdout
        return text.components(separatedBy: "=== TIFF directory").dropFirst().compactMap { page in
            let words = page.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard let w = words.firstIndex(of: "Width:"), let h = words.firstIndex(of: "Length:"),
                  let width = Int(words[w + 1]), let height = Int(words[h + 1]) else { return nil }
            return (width, height, page.contains("reduced-resolution image"))
        }
    }

    @Test("a pyramid loads its smallest page that keeps the margin; the first page for a large output")
    func shrinkOnLoad() throws {
        let scratch = try ScratchDirectory("tiff-pyramid")
        defer { scratch.remove() }
        let path = scratch.path("pyramid.tif")
        try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo, path, "--tile", "--pyramid", "--compression", "jpeg", "--Q", "90"])
        let pages = try Self.pages(path)
        try #require(pages.count >= 5 && pages.dropFirst().allSatisfy(\.reduced), "\(pages)")
        let (width, height) = (pages[0].width, pages[0].height)
        let loader = try TIFFLoader(source: loadSource(path), limits: ImageLimits())
        #expect(loader.storedWidth == width && loader.storedHeight == height)
        for (maxShrink, outputShrink) in [(10.0, 12.0), (3.0, 3.5), (20.0, 30.0)] {
            // tiffinfo's sizes: the smallest page at least stored / maxShrink in both axes, of the same aspect within 1%.
            let aspect = Double(width) / Double(height)
            let expected = pages.dropFirst().filter {
                Double($0.width) >= Double(width) / maxShrink && Double($0.height) >= Double(height) / maxShrink
                    && abs(Double($0.width) / Double($0.height) - aspect) <= 0.01 * aspect
            }.min { $0.width < $1.width }
            let frame = try loader.load(maxShrink: maxShrink, outputShrink: outputShrink, isCancelled: nil)
            let page = try #require(expected, "no level serves \(maxShrink)")
            #expect(loader.decodedImage == .reducedPage(width: page.width, height: page.height), "shrink \(maxShrink)")
            // The page is box-reduced by what is left of maxShrink, never below stored / maxShrink.
            #expect(Double(frame.pixels.width) >= Double(width) / maxShrink - 1, "\(frame.pixels.width) at \(maxShrink)")
            #expect(frame.pixels.width <= page.width)
        }
        let full = try loader.load(maxShrink: 1, outputShrink: 1, isCancelled: nil)
        #expect(loader.decodedImage == .firstPage)
        #expect(full.pixels.width == width && full.pixels.height == height)
    }

    /// Mean difference from `vips thumbnail` at the same size, over RGB. Measured (fit in
    /// 256 and 100 px): 0.5–1.3 for the three files; a mirrored picture is over 20 off (checked). Both
    /// reduce with a box then Lanczos 3, but at different splits, so not to the byte.
    static let vipsBound = 3.0

    @Test("photos as striped LZW, tiled JPEG and a pyramid: like vips thumbnail", arguments: ["lzw", "jpeg-tiles", "pyramid"])
    func likeVips(_ kind: String) throws {
        let scratch = try ScratchDirectory("tiff-vips")
        defer { scratch.remove() }
        let path = scratch.path("\(kind).tif")
        let options = switch kind {
        case "lzw": ["--compression", "lzw"]
        case "jpeg-tiles": ["--tile", "--compression", "jpeg", "--Q", "90"]
        default: ["--tile", "--pyramid", "--compression", "jpeg", "--Q", "90"]
        }
        try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo, path] + options)
        for box in [256, 100] {
            let request = try TIFFTestSupport.request(width: box, height: box)
            let image = try Thumbnailer().render(loadSource(path), request: request)
            let reference = try TIFFTestSupport.vipsThumbnail(path, width: image.pixels.width, height: image.pixels.height, in: scratch)
            let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels, reference, channelsB: 3)
            #expect(error < Self.vipsBound, "\(kind) @ \(box) \(image.pixels.width)x\(image.pixels.height): \(error) off vips")
            let mirrored = Orientation.downMirrored.apply(to: image.pixels)
            #expect(Pixels.meanAbsoluteError(mirrored.bytes, channelsA: mirrored.channels, reference, channelsB: 3) > Self.vipsBound)
        }
    }

    /// CMYK through its embedded profile: measured 5.3 off vips thumbnail (which converts through
    /// the same profile, with its own lcms settings), while the naive conversion is 28 off it.
    static let cmykBound = 8.0

    @Test("CMYK with an embedded ICC profile goes through it, not the naive formula")
    func cmykProfile() throws {
        let scratch = try ScratchDirectory("tiff-cmyk")
        defer { scratch.remove() }
        let (small, path) = (scratch.path("small.v"), scratch.path("cmyk.tif"))
        try TIFFTestSupport.run("vips", ["thumbnail", TIFFTestSupport.photo, small, "600"])
        // libvips' own CMYK profile (about 1 MB), embedded by icc_export.
        try TIFFTestSupport.run("vips", ["icc_export", small, path, "--output-profile", "cmyk"])
        let loader = try TIFFLoader(source: loadSource(path), limits: ImageLimits())
        #expect(loader.route == .cmyk)
        let image = try Thumbnailer().render(loadSource(path), request: TIFFTestSupport.request(width: 256, height: 256))
        let reference = try TIFFTestSupport.vipsThumbnail(path, width: image.pixels.width, height: image.pixels.height, in: scratch)
        let error = Pixels.meanAbsoluteError(image.pixels.bytes, channelsA: image.pixels.channels, reference, channelsB: 3)
        #expect(error < Self.cmykBound, "\(error) off vips")
        let naive = try Python.pillowResized(path, width: image.pixels.width, height: image.pixels.height)
        #expect(Pixels.meanAbsoluteError(naive, channelsA: 3, reference, channelsB: 3) > 2 * Self.cmykBound,
                "the naive conversion is as close: the test cannot tell them apart")
    }
}
