import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Damaged progressive JPEGs with scan selection: the selection leaves a stream it cannot vouch
/// for whole (truncated, a stray marker, an early EOI), so the outcome is what it was before
/// (`selectsScans: false`); damage inside the entropy-coded data of a kept scan is seen alike,
/// and damage inside a skipped scan cannot change a pixel (its warnings go with it).
@Suite("Progressive JPEG scan selection on damaged files")
struct ProgressiveDamageTests {
    enum Expected { case decodedWhole, sameWarnings, skippedDamage }

    /// The 816x612 4:2:0 progressive file (10 scans: DC, four luma and two chroma AC, DC refinement, ...).
    static func damaged(_ name: String) throws -> (bytes: [UInt8], expected: Expected) {
        let file = try ProgressiveFixtures.generated("420")
        let scans = ProgressiveFixtures.scanOffsets(file)
        try #require(scans.count == 10)
        let middle = { (scan: Int) in (scans[scan] + (scan + 1 < scans.count ? scans[scan + 1] : file.count)) / 2 }
        switch name {
        case "truncated in the DC scan": return (Array(file[..<middle(0)]), .decodedWhole)
        case "truncated in a skipped AC scan": return (Array(file[..<middle(1)]), .decodedWhole)
        case "truncated in the last scan": return (Array(file[..<middle(9)]), .decodedWhole)
        case "stray SOF marker in a skipped AC scan": return (inserting([0xFF, 0xC0], into: file, at: middle(1)), .decodedWhole)
        case "EOI in a skipped AC scan": return (inserting([0xFF, 0xD9], into: file, at: middle(1)), .decodedWhole)
        case "bytes changed in the DC scan": return (flipping(file, in: scans[0] + 40..<middle(0)), .sameWarnings)
        case "bytes changed in a skipped AC scan": return (flipping(file, in: scans[1] + 40..<middle(1)), .skippedDamage)
        default: throw TestFailure("no damage \(name)")
        }
    }

    static let damages = ["truncated in the DC scan", "truncated in a skipped AC scan", "truncated in the last scan",
                          "stray SOF marker in a skipped AC scan", "EOI in a skipped AC scan",
                          "bytes changed in the DC scan", "bytes changed in a skipped AC scan"]

    /// `marker` inserted after the data byte before `at` (moved off a 0xFF, which would pair with it).
    static func inserting(_ marker: [UInt8], into bytes: [UInt8], at: Int) -> [UInt8] {
        var at = at
        while bytes[at - 1] == 0xFF || bytes[at] == 0x00 { at += 1 }
        return Array(bytes[..<at]) + marker + Array(bytes[at...])
    }

    /// Entropy-coded bytes changed every 97 bytes without making or breaking a marker (no 0xFF in or out).
    static func flipping(_ bytes: [UInt8], in range: Range<Int>) -> [UInt8] {
        var changed = bytes
        for at in stride(from: range.lowerBound, to: range.upperBound, by: 97)
        where bytes[at] != 0xFF && bytes[at - 1] != 0xFF && bytes[at] ^ 0x5A != 0xFF {
            changed[at] ^= 0x5A
        }
        return changed
    }

    static func outcome(_ bytes: [UInt8], selects: Bool) -> Result<JPEGScaledPixels, ImagingError> {
        Result { () throws(ImagingError) in
            try JPEGScaledPixels.decode(SourceBytes(bytes), scaleDenominator: 8, selectsScans: selects, limits: ImageLimits())
        }
    }

    @Test("a damaged progressive file decodes at 1/8 as it did before, or differs only by a skipped scan's warnings",
          arguments: damages)
    func damagedFile(_ name: String) throws {
        let (bytes, expected) = try Self.damaged(name)
        let whole = Self.outcome(bytes, selects: false)
        let selected = Self.outcome(bytes, selects: true)
        switch (whole, selected) {
        case let (.success(whole), .success(selected)):
            #expect(selected.pixels == whole.pixels, "\(name): pixels differ")
            switch expected {
            case .decodedWhole:
                #expect(selected.skippedScanBytes == 0, "\(name): scans skipped in a stream the selection cannot vouch for")
                #expect(selected.warningCount == whole.warningCount && whole.warningCount > 0, "\(name): \(selected.warningCount) vs \(whole.warningCount)")
            case .sameWarnings:
                #expect(selected.skippedScanBytes > 0)
                #expect(selected.warningCount == whole.warningCount && whole.warningCount > 0, "\(name): \(selected.warningCount) vs \(whole.warningCount)")
            case .skippedDamage:
                #expect(selected.skippedScanBytes > 0)
                #expect(selected.warningCount == 0 && whole.warningCount > 0, "\(name): \(selected.warningCount) vs \(whole.warningCount)")
            }
        case let (.failure(wholeError), .failure(selectedError)):
            #expect(selectedError == wholeError, "\(name)")
            #expect(expected == .decodedWhole, "\(name): \(wholeError)")
        default:
            Issue.record("\(name): whole \(whole), selected \(selected)")
        }
        // And a thumbnail of it (24x24 from 816x612: decoded at 1/8): a warning, or a clear error.
        let dot = SlotKind(name: "dot", widthPoints: 24, heightPoints: 24, scales: [1], mode: .fill, mask: .circle)
        do {
            let image = try Thumbnailer().render(SourceBytes(bytes), request: ThumbnailRequest(kind: dot, scale: 1))
            #expect(image.pixels.width == 24 && (image.warning != nil) == (expected != .skippedDamage), "\(name): \(image.warning ?? "no warning")")
        } catch {
            guard case .undecodable = error else { Issue.record("\(name): \(error)"); return }
        }
    }

    @Test("the corpus's damaged progressive files (WARN, ERROR rows) are decoded whole, as before",
          arguments: try ProgressiveFixtures.corpus(status: "WARN") + ProgressiveFixtures.corpus(status: "ERROR"))
    func corpusDamagedFile(_ entry: CorpusManifest.Row) {
        let bytes = ProgressiveFixtures.bytes(entry.path)
        switch (Self.outcome(bytes, selects: false), Self.outcome(bytes, selects: true)) {
        case let (.success(whole), .success(selected)):
            #expect(selected == whole, "\(entry.file)")
            #expect(selected.skippedScanBytes == 0 && selected.warningCount > 0)
        case let (.failure(wholeError), .failure(selectedError)):
            #expect(selectedError == wholeError)
        case let (whole, selected):
            Issue.record("\(entry.file): whole \(whole), selected \(selected)")
        }
    }

    /// Found by fuzz-jpeg-dc-scans: the walk stopped copying at EOI, so the kept stream lost whatever
    /// followed it (appended previews, padding) and no longer was the file minus its skipped scans.
    @Test("bytes after EOI stay in the kept stream, and the decode is the whole decode's")
    func bytesAfterEndOfImageAreKept() throws {
        let file = try ProgressiveFixtures.generated("420")
        let trailer: [UInt8] = Array("appended preview".utf8) + [0xFF, 0xD8, 0xFF, 0xD9, 0x00, 0xFF]
        let bytes = file + trailer
        let kept = try #require(JPEGScanSelection.keep(bytes, acComponents: 0, maxScans: limitsScans))
        #expect(kept.skippedBytes > 0)
        #expect(kept.stream.count + kept.skippedBytes == bytes.count)
        #expect(Array(kept.stream.suffix(trailer.count)) == trailer)
        guard case let .success(whole) = Self.outcome(bytes, selects: false),
              case let .success(selected) = Self.outcome(bytes, selects: true) else {
            Issue.record("a progressive file with a trailer failed to decode")
            return
        }
        #expect(selected.skippedScanBytes > 0 && selected.pixels == whole.pixels)
        #expect(selected.warningCount == whole.warningCount)
    }

    @Test("the walk never vouches for a truncated stream: every prefix of a progressive file is left whole")
    func everyPrefixIsLeftWhole() throws {
        let bytes = ProgressiveFixtures.bytes(Paths.corpusFile("edge-cases", "image-rs/images/jpg/progressive/test.jpg"))
        let scans = limitsScans
        let kept = try #require(JPEGScanSelection.keep(bytes, acComponents: 0, maxScans: scans))
        #expect(kept.scans == 10 && kept.keptScans < 10 && kept.skippedBytes > 0)
        #expect(kept.stream.count == bytes.count - kept.skippedBytes)
        #expect(Array(kept.stream[..<kept.headerBytes]) == Array(bytes[..<kept.headerBytes]))
        #expect(kept.stream.suffix(2) == [0xFF, 0xD9])
        var vouched: [Int] = []
        for length in 0..<bytes.count where JPEGScanSelection.keep(Array(bytes[..<length]), acComponents: 0, maxScans: scans) != nil {
            vouched.append(length)
        }
        #expect(vouched.isEmpty, "prefixes of \(bytes.count) bytes the walk vouched for: \(vouched.prefix(10))")
        // The kept stream leaves luma's AC coefficients unknown: a second walk leaves it whole.
        #expect(JPEGScanSelection.keep(kept.stream, acComponents: 0, maxScans: scans) == nil)
    }

    let limitsScans = ImageLimits().maxProgressiveScans
}
