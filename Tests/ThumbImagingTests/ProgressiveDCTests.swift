import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Progressive JPEGs at 1/8 from the scans their pixels show (issue 11): at that scale a
/// component whose blocks decode to one pixel needs only its DC coefficients, so libjpeg is given
/// the file without that component's AC scans. Every check compares with the whole decode at the
/// same scale (`selectsScans: false`, the code path before the change): the same pixels (measured
/// maximum difference: 0 on every file), and the skipped bytes and scans show the selection ran.
@Suite("Progressive JPEG from its DC scans")
struct ProgressiveDCTests {
    static let limits = ImageLimits()

    static func decode(_ bytes: [UInt8], scale: Int = 8, selects: Bool, limits: ImageLimits = limits) throws -> JPEGScaledPixels {
        try JPEGScaledPixels.decode(SourceBytes(bytes), scaleDenominator: scale, selectsScans: selects, limits: limits)
    }

    /// The largest difference of one sample between two decodes of the same size.
    static func maxDifference(_ a: JPEGScaledPixels, _ b: JPEGScaledPixels) -> Int {
        guard a.width == b.width, a.height == b.height, a.components == b.components, a.pixels.count == b.pixels.count
        else { return Int.max }
        var largest = 0
        for index in a.pixels.indices { largest = max(largest, abs(Int(a.pixels[index]) - Int(b.pixels[index]))) }
        return largest
    }

    /// Corpus files the selection leaves whole, and why (every other progressive OK row must use it).
    static let decodedWhole = [
        "progressive-missing-ac.jpg": "a DC scan and nothing else: no AC scan to skip, and coefficients left unknown",
    ]

    static func corpusFiles() throws -> [CorpusManifest.Row] { try ProgressiveFixtures.corpus(status: "OK") }

    @Test("the corpus has progressive JPEGs to check")
    func corpusHasProgressiveFiles() throws {
        // 15 at the time of writing: image-rs, jpeg-decoder, libjxl, pillow, imagor, exif-samples.
        let files = try Self.corpusFiles()
        #expect(files.count >= 10, "found \(files.map(\.file))")
    }

    @Test("every progressive JPEG of the corpus decodes at 1/8 from its kept scans exactly as whole",
          arguments: try corpusFiles())
    func corpusFileMatchesWholeDecode(_ entry: CorpusManifest.Row) throws {
        let bytes = ProgressiveFixtures.bytes(entry.path)
        let whole = try Self.decode(bytes, selects: false)
        let selected = try Self.decode(bytes, selects: true)
        #expect(Self.maxDifference(selected, whole) == 0, "\(entry.file): \(selected.width)x\(selected.height) vs \(whole.width)x\(whole.height)")
        #expect(selected.warningCount == 0 && whole.warningCount == 0, "\(entry.file): \(selected.warningCount) / \(whole.warningCount) warnings")
        let name = URL(fileURLWithPath: entry.file).lastPathComponent
        if Self.decodedWhole[name] != nil {
            #expect(selected.skippedScanBytes == 0 && selected.scansRead == whole.scansRead)
        } else {
            #expect(selected.skippedScanBytes > 0, "\(entry.file): nothing skipped")
            #expect(selected.scansRead < whole.scansRead, "\(entry.file): \(selected.scansRead) of \(whole.scansRead) scans read")
        }
        #expect(whole.skippedScanBytes == 0)
    }

    @Test("generated progressive files (restarts, DC refinement, 4:2:2, 4:4:0, gray, CMYK, 12 MP) decode alike",
          arguments: ProgressiveFixtures.generatedNames)
    func generatedFileMatchesWholeDecode(_ name: String) throws {
        let bytes = try ProgressiveFixtures.generated(name)
        let whole = try Self.decode(bytes, selects: false)
        let selected = try Self.decode(bytes, selects: true)
        #expect(Self.maxDifference(selected, whole) == 0, "\(name)")
        #expect(selected.warningCount == 0 && whole.warningCount == 0)
        #expect(selected.skippedScanBytes > bytes.count / 2, "\(name): skipped \(selected.skippedScanBytes) of \(bytes.count) bytes")
        #expect(selected.scansRead < whole.scansRead)
    }

    @Test("the work: at 1/8 a 4:4:4 file's one DC scan of 7 is read, 4:2:0 keeps chroma's AC; 1/4 and baseline read all")
    func scansRead() throws {
        // 1900x1263, 4:4:4: every component's block is one pixel at 1/8.
        let imagor = ProgressiveFixtures.bytes(Paths.corpusFile("edge-cases", "imagor/jpg-24bit-icc-adobe-rgb.jpg"))
        let selected = try Self.decode(imagor, selects: true)
        let imagorWhole = try Self.decode(imagor, selects: false)
        #expect(selected.scansRead == 1 && imagorWhole.scansRead == 7)
        #expect(selected.skippedScanBytes > imagor.count * 8 / 10, "skipped \(selected.skippedScanBytes) of \(imagor.count)")
        let quarter = try Self.decode(imagor, scale: 4, selects: true)
        #expect(quarter.skippedScanBytes == 0 && quarter.scansRead == 7, "at 1/4 every coefficient counts")

        // 4:2:0: chroma blocks are 2x2 pixels at 1/8 (libjpeg scales them by IDCT, not upsampling),
        // so the four chroma AC scans stay with the two DC scans; luma's four AC scans go.
        let photo = try ProgressiveFixtures.generated("photo-12mp")
        let photoSelected = try Self.decode(photo, selects: true)
        let photoWhole = try Self.decode(photo, selects: false)
        #expect(photoSelected.scansRead == 6 && photoWhole.scansRead == 10)
        #expect(photoSelected.skippedScanBytes > photo.count * 8 / 10, "skipped \(photoSelected.skippedScanBytes) of \(photo.count)")

        let baseline = ProgressiveFixtures.bytes(Paths.corpusFile("exif-orientation", "Landscape_1.jpg"))
        let sequential = try Self.decode(baseline, selects: true)
        #expect(sequential.skippedScanBytes == 0 && sequential.scansRead == 1)
        #expect(Self.maxDifference(sequential, try Self.decode(baseline, selects: false)) == 0)
    }

    @Test("thumbnails through the Thumbnailer: a small fill of a progressive photo skips scans, a batch with large does not, pixels alike")
    func thumbnailerUsesSelection() throws {
        let large = try Sample.request("large")
        // contact-avatar@3x (144x144) of the 4000x3000 photo, and a 24x24 circle of the 1900x1263
        // 4:4:4 file: both decoded at 1/8 (the 1900x1263 file's avatar is decoded at 1/4).
        let dot = ThumbnailRequest(kind: SlotKind(name: "dot", widthPoints: 24, heightPoints: 24, scales: [1], mode: .fill,
                                                  mask: .circle), scale: 1)
        for (bytes, avatar) in [(try ProgressiveFixtures.generated("photo-12mp"), try Sample.request("contact-avatar@3x")),
                                (ProgressiveFixtures.bytes(Paths.corpusFile("edge-cases", "imagor/jpg-24bit-icc-adobe-rgb.jpg")), dot)] {
            let thumbnailer = Thumbnailer()
            let source = SourceBytes(bytes)
            let selected = try thumbnailer.renderJPEG(source, requests: [avatar], isCancelled: nil)
            let whole = try thumbnailer.renderJPEG(source, requests: [avatar], isCancelled: nil, selectsScans: false)
            #expect(selected[0].skippedScanBytes > bytes.count / 2)
            #expect(whole[0].skippedScanBytes == 0)
            #expect(selected[0].pixels == whole[0].pixels)
            // One decode for both: `large` wants 1/4 (or less), where nothing may be skipped.
            let batch = try thumbnailer.renderJPEG(source, requests: [avatar, large], isCancelled: nil)
            #expect(batch.allSatisfy { $0.skippedScanBytes == 0 })
        }
    }

    @Test("a progressive file with more scans than the limit is still refused at 1/8; at the limit it is selected")
    func scanLimitHolds() throws {
        let jpeg = try LimitsTests.hundredScanJPEG() // 64x48, 100 scans
        var limits = ImageLimits()
        limits.maxProgressiveScans = 99
        let source = SourceBytes(jpeg)
        let (refused, got) = LimitsTests.isTooLarge { () throws(ImagingError) in
            _ = try JPEGScaledPixels.decode(source, scaleDenominator: 8, selectsScans: true, limits: limits)
        }
        #expect(refused, "100 scans, maxProgressiveScans = 99, at 1/8: expected .tooLarge, got \(got)")
        limits.maxProgressiveScans = 100
        let selected = try Self.decode(jpeg, selects: true, limits: limits)
        let whole = try Self.decode(jpeg, selects: false, limits: limits)
        #expect(selected.skippedScanBytes > 0 && selected.scansRead < 100)
        #expect(Self.maxDifference(selected, whole) == 0)
    }
}
