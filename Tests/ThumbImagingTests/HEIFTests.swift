import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The HEIF and AVIF rows of formats-manifest.tsv, in process: OK files at the displayed size
/// for three kinds and close to Pillow's rendering, ERROR files refused fast with one line.
@Suite("HEIF and AVIF corpus")
struct HEIFTests {
    static let kinds = ["contact-avatar@3x", "product-grid@3x", "large"]
    /// Mean absolute error bound against Pillow (RGB over white, 0–255), printed per file and
    /// kind as "HEIF-vs-Pillow" lines; the bound is above the largest seen.
    static let maxMeanError = 4.0

    /// The 200 MP file is compared with its own full decode in HEIFThumbnailTests (Pillow would
    /// decode 200 MP for each run here).
    static func okRows() throws -> [CorpusManifest.Row] { try HEIFCorpus.with(status: "OK").filter { !$0.file.contains("200MP") } }

    @Test func manifestHasTheHEIFAndAVIFRows() throws {
        let rows = try HEIFCorpus.rows()
        #expect(rows.count == 41, "\(rows.count) HEIF/AVIF rows")
        #expect(try HEIFCorpus.with(status: "ERROR").map(\.file).sorted() == ["pillow_heif__corrupted.heic", "pillow_heif__empty.heic"])
    }

    @Test("OK files render at the displayed size, close to Pillow", arguments: try okRows())
    func okFileRendersLikePillow(_ row: CorpusManifest.Row) throws {
        let source = try loadSource(row.path)
        let shown = try #require(row.displayedSize)
        let requests = try Self.kinds.map { try Sample.request($0) }
        let rendered = try Thumbnailer().renderAll(source, requests: requests, placeholder: .skip, isCancelled: nil).images
        var comparisons: [(PixelBuffer, Int)] = []
        for (index, (slot, request)) in zip(Self.kinds, requests).enumerated() {
            let image = rendered[index]
            let pixelSlot = request.kind.pixelSize(scale: request.scale)
            let expected = ExpectedSize.of(sourceWidth: shown.width, sourceHeight: shown.height, slotWidth: pixelSlot.width,
                                           slotHeight: pixelSlot.height, fill: request.kind.mode == .fill)
            #expect(image.sourceWidth == shown.width && image.sourceHeight == shown.height,
                    "\(row.file): displayed \(image.sourceWidth)x\(image.sourceHeight), manifest says \(shown.width)x\(shown.height)")
            #expect(image.pixels.width == expected.width && image.pixels.height == expected.height,
                    "\(row.file) @ \(slot): \(image.pixels.width)x\(image.pixels.height), expected \(expected.width)x\(expected.height)")
            if request.kind.mode == .fit { comparisons.append((image.pixels, index)) }
        }
        let references = try HEIFReference.pillow(row, sizes: comparisons.map { ($0.0.width, $0.0.height) })
        for ((pixels, index), reference) in zip(comparisons, references) {
            let flat = pixels.flattened()
            let error = Pixels.meanAbsoluteError(flat.bytes, channelsA: 3, reference.rgb, channelsB: 3)
            let alphaError = HEIFReference.alphaError(pixels, reference.alpha)
            print("HEIF-vs-Pillow \(row.file) @ \(Self.kinds[index]): mean error \(error), alpha \(alphaError)")
            #expect(error < Self.maxMeanError && alphaError < Self.maxMeanError,
                    "\(row.file) @ \(Self.kinds[index]): mean error \(error) (alpha \(alphaError)) against Pillow")
        }
    }

    @Test("ERROR files fail fast with one line", arguments: try HEIFCorpus.with(status: "ERROR"))
    func errorFileFails(_ row: CorpusManifest.Row) throws {
        let source = try loadSource(row.path)
        let start = ContinuousClock.now
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            do throws(ImagingError) {
                let thumbnail = try Thumbnailer().thumbnail(of: source, request: request)
                Issue.record("\(row.file) @ \(slot): expected a failure, got \(thumbnail.width)x\(thumbnail.height)")
            } catch {
                switch error {
                case .undecodable(let reason), .unsupportedFormat(let reason):
                    #expect(!reason.isEmpty && !reason.contains("\n"), "\(row.file): \(reason)")
                    #expect(reason.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 }, "\(row.file): \(reason)")
                default:
                    Issue.record("\(row.file) @ \(slot): \(error) is not a 415-class error")
                }
            }
        }
        #expect(ContinuousClock.now - start < .seconds(2), "three refusals of \(row.file)")
    }

    /// libheif's own words reach the reason: the corrupted file has no `meta` box.
    @Test func corruptedFileNamesWhatLibheifSaid() throws {
        let source = try loadSource(try HEIFCorpus.file("pillow_heif__corrupted.heic").path)
        #expect(throws: ImagingError.undecodable(reason: "libheif: Invalid input: No 'meta' box (error 2, suberror 104)")) {
            _ = try HEIFLoader(source: source, format: .heif, limits: ImageLimits())
        }
    }

    /// irot/imir are applied by libheif (the displayed size); an EXIF orientation tag is not
    /// applied on top: the loader's orientation is always `.up`.
    @Test(arguments: ["pillow__rot1mir0.avif", "pillow__rot3mir1.avif", "libavif__abc_color_irot_alpha_irot.avif",
                      "pillow__xmp_tags_orientation.avif", "pillow_heif__arrow.heic"])
    func transformsAreAppliedByLibheifAndEXIFIsNot(_ file: String) throws {
        let row = try HEIFCorpus.file(file)
        let loader = try HEIFLoader(source: loadSource(row.path), format: .avif, limits: ImageLimits())
        let shown = try #require(row.displayedSize)
        #expect(loader.storedWidth == shown.width && loader.storedHeight == shown.height, "\(file)")
        #expect(loader.orientation == .up)
    }

    @Test(arguments: ["pillow__transparency.avif", "pillow_heif__RGBA_8__29x100.heif", "pillow_heif__LA_8__128x128.heif",
                      "pillow_heif__RGBA_12__128x128.heif", "libavif__abc_color_irot_alpha_irot.avif"])
    func alphaIsKept(_ file: String) throws {
        let loader = try HEIFLoader(source: loadSource(try HEIFCorpus.file(file).path), format: .heif, limits: ImageLimits())
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.channels == 4 && frame.pixels.hasTransparency, "\(file)")
        let rendered = try Thumbnailer().render(loadSource(try HEIFCorpus.file(file).path), request: Sample.request("large"))
        #expect(rendered.pixels.hasTransparency, "\(file): the thumbnail keeps the transparency")
    }

    @Test(arguments: ["pillow_heif__L_8__29x100.heif", "libavif__fox.profile0.8bpc.yuv420.monochrome.avif"])
    func monochromeBecomesGrayRGB(_ file: String) throws {
        let loader = try HEIFLoader(source: loadSource(try HEIFCorpus.file(file).path), format: .heif, limits: ImageLimits())
        let pixels = try loader.load(maxShrink: 1, isCancelled: nil).pixels
        #expect(pixels.channels == 3 && pixels.width == loader.storedWidth && pixels.height == loader.storedHeight)
        var distinct = Set<UInt8>()
        for index in 0..<(pixels.width * pixels.height) {
            let (r, g, b) = (pixels.bytes[index * 3], pixels.bytes[index * 3 + 1], pixels.bytes[index * 3 + 2])
            if r != g || g != b { Issue.record("\(file): pixel \(index) is \(r),\(g),\(b)"); break }
            distinct.insert(r)
        }
        #expect(distinct.count > 16, "\(file): a real gray image, not a flat one")
    }

    @Test func gridImageIsAssembledWhole() throws {
        let row = try HEIFCorpus.file("libavif__sofa_grid1x5_420.avif")
        let loader = try HEIFLoader(source: loadSource(row.path), format: .avif, limits: ImageLimits())
        #expect(loader.storedWidth == 1024 && loader.storedHeight == 770)
        let frame = try loader.load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.width == 1024 && frame.pixels.height == 770)
        // Each of the 5 tiles (154 rows) has real content: no tile left black.
        for tile in 0..<5 {
            let y = tile * 154 + 77
            let row = frame.pixels.bytes[(y * 1024 * 3)..<((y + 1) * 1024 * 3)]
            #expect(row.contains { $0 > 40 }, "tile \(tile) is empty")
        }
    }

    @Test func iccProfileIsHandedOver() throws {
        let row = try HEIFCorpus.file("pillow__icc_profile.avif")
        let frame = try HEIFLoader(source: loadSource(row.path), format: .avif, limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        let script = "import sys\nfrom PIL import Image\nsys.stdout.buffer.write(Image.open(sys.argv[1]).info['icc_profile'])"
        let expected = [UInt8](try Python.run(script, [row.path]))
        #expect(expected.count == 3144 && frame.iccProfile == expected)
    }

    /// The truncated file (its second image's data runs 1 byte past the end) opens with a warning.
    @Test func truncatedFileOpensWithAWarning() throws {
        let row = try HEIFCorpus.file("pillow_heif__truncated.heic")
        let frame = try HEIFLoader(source: loadSource(row.path), format: .heif, limits: ImageLimits()).load(maxShrink: 1, isCancelled: nil)
        #expect(frame.pixels.width == 16 && frame.pixels.height == 16)
        #expect(frame.warning?.contains("truncated") == true, "\(frame.warning ?? "no warning")")
    }
}
