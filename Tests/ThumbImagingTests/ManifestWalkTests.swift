import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging

/// Every file of the corpus manifest, in process: OK files render at the right size for three
/// kinds, WARN files render or fail cleanly, ERROR files fail with an ImagingError.
@Suite("Corpus manifest walk")
struct ManifestWalkTests {
    static let kinds = ["contact-avatar@3x", "product-grid@3x", "large"]

    @Test("the corpus and its manifest are where the tests expect them")
    func corpusIsPresent() throws {
        #expect(FileManager.default.fileExists(atPath: Paths.corpus + "/manifest.tsv"),
                "corpus not found at \(Paths.corpus)")
        let rows = try CorpusManifest.jpegAndPNG()
        #expect(rows.count > 600, "manifest has \(rows.count) rows")
        #expect(try Manifest.with(status: "OK").count > 500)
        #expect(try Manifest.with(status: "ERROR").count > 50)
        #expect(try Manifest.otherFormatsByContent().map(\.file) == ["exif-py/heic_hdlr_box.jpg"])
        #expect(try Manifest.with(status: "WARN").count > 20)
        #expect(Sample.config != nil, "sample config \(Paths.sampleConfig) does not load")
    }

    @Test("OK files render at the expected size for every kind", arguments: try Manifest.with(status: "OK"))
    func okFileRenders(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        let sw = try #require(entry.width), sh = try #require(entry.height)
        let swaps = entry.orientation >= 5
        let (shownW, shownH) = swaps ? (sh, sw) : (sw, sh)
        // Two kinds through the encoder, the third rendered to pixels (to read the source size back):
        // three decodes per file keep the walk affordable in debug builds.
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            let pixelSlot = request.kind.pixelSize(scale: request.scale)
            let expected = ExpectedSize.of(sourceWidth: shownW, sourceHeight: shownH, slotWidth: pixelSlot.width,
                                           slotHeight: pixelSlot.height, fill: request.kind.mode == .fill)
            let got: (width: Int, height: Int)
            do {
                if slot == "large" {
                    let rendered = try Thumbnailer().render(source, request: request)
                    got = (rendered.pixels.width, rendered.pixels.height)
                    #expect(rendered.sourceWidth == shownW && rendered.sourceHeight == shownH,
                            "\(entry.file): manifest says \(shownW)x\(shownH) shown (orientation \(entry.orientation)), renderer says \(rendered.sourceWidth)x\(rendered.sourceHeight)")
                } else {
                    let thumbnail = try Thumbnailer().thumbnail(of: source, request: request)
                    got = (thumbnail.width, thumbnail.height)
                    #expect(Self.hasSignature(thumbnail.bytes, of: thumbnail.format), "\(entry.file) @ \(slot): bad \(thumbnail.format) signature")
                }
            } catch {
                Issue.record("\(entry.file) @ \(slot): expected a thumbnail, got \(error)")
                continue
            }
            #expect(got.width == expected.width && got.height == expected.height,
                    "\(entry.file) (\(shownW)x\(shownH) shown) @ \(slot): expected \(expected.width)x\(expected.height), got \(got.width)x\(got.height)")
        }
    }

    @Test("WARN files render or fail with an ImagingError", arguments: try Manifest.with(status: "WARN"))
    func warnFileDoesNotCrash(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            do {
                let thumbnail = try Thumbnailer().thumbnail(of: source, request: request)
                #expect(Self.hasSignature(thumbnail.bytes, of: thumbnail.format))
                #expect(thumbnail.width >= 1 && thumbnail.height >= 1)
                let slotSize = request.kind.pixelSize(scale: request.scale)
                #expect(thumbnail.width <= slotSize.width && thumbnail.height <= slotSize.height)
            } catch {
                // A typed ImagingError: acceptable for a damaged file. It must say something.
                #expect(!error.description.isEmpty)
            }
        }
    }

    /// The manifest's ERROR rows that are another format by content render as that format.
    @Test("a HEIC named .jpg renders by its content", arguments: try Manifest.otherFormatsByContent())
    func otherFormatByContent(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        #expect(source.format == .heif, "\(entry.file): \(String(describing: source.format))")
        let thumbnail = try Thumbnailer().thumbnail(of: source, request: try Sample.request("large"))
        #expect(thumbnail.width == 256 || thumbnail.height == 256, "\(thumbnail.width)x\(thumbnail.height)")
    }

    @Test("ERROR files fail with an ImagingError", arguments: try Manifest.mustFail())
    func errorFileFails(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        for slot in Self.kinds {
            let request = try Sample.request(slot)
            do {
                let thumbnail = try Thumbnailer().thumbnail(of: source, request: request)
                if entry.isHighPrecisionJPEG {
                    #expect(Self.hasSignature(thumbnail.bytes, of: thumbnail.format))
                } else {
                    Issue.record("\(entry.file) @ \(slot): expected an ImagingError, got a \(thumbnail.width)x\(thumbnail.height) thumbnail")
                }
            } catch {
                switch error {
                case .unsupportedFormat(let reason), .undecodable(let reason), .tooLarge(let reason):
                    #expect(!reason.isEmpty, "\(entry.file): empty reason")
                case .cancelled, .encodingFailed, .outputTooLarge:
                    Issue.record("\(entry.file) @ \(slot): unexpected error kind \(error)")
                }
            }
        }
    }

    /// A sample across the corpus: Pillow must open the encoded thumbnail at the reported size.
    static func pillowSample() throws -> [CorpusManifest.Row] {
        let ok = try Manifest.with(status: "OK")
        let picks = ["basn6a08.png", "basi2c16.png", "Landscape_6.jpg", "testimgint.jpg", "pil_sample_cmyk.jpg",
                     "ycck.jpg", "basn3p04.png", "frozenpond.mpo"]
        return ok.filter { picks.contains(($0.file as NSString).lastPathComponent) }
    }

    @Test("Pillow decodes the encoded thumbnails at the reported size", arguments: try pillowSample())
    func pillowOpensThumbnail(_ entry: CorpusManifest.Row) throws {
        let source = try loadSource(entry.path)
        for slot in Self.kinds {
            let thumbnail = try Thumbnailer().thumbnail(of: source, request: Sample.request(slot))
            let seen = try Python.pillowSize(of: thumbnail.bytes)
            #expect(seen.width == thumbnail.width && seen.height == thumbnail.height,
                    "\(entry.file) @ \(slot): Pillow sees \(seen.width)x\(seen.height), thumbd said \(thumbnail.width)x\(thumbnail.height)")
            #expect(seen.format == (thumbnail.format == .png ? "PNG" : "JPEG"))
        }
    }

    static func hasSignature(_ bytes: [UInt8], of format: ImageFormat) -> Bool {
        switch format {
        case .png: bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            && bytes.suffix(8).elementsEqual([0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
        case .jpeg: bytes.starts(with: [0xFF, 0xD8, 0xFF]) && bytes.suffix(2).elementsEqual([0xFF, 0xD9])
        case .webp: bytes.starts(with: Array("RIFF".utf8)) && bytes.dropFirst(8).starts(with: Array("WEBP".utf8))
        case .avif: bytes.dropFirst(4).starts(with: Array("ftypavif".utf8))
        }
    }
}
