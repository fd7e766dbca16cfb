import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging

/// Limits are enforced from headers, before pixel buffers exist: dimension bombs, lowered pixel
/// caps, and progressive JPEGs with too many scans all answer `.tooLarge`, quickly.
@Suite("Image limits")
struct LimitsTests {
    static func isTooLarge(_ body: () throws(ImagingError) -> Void) -> (Bool, String) {
        do {
            try body()
            return (false, "no error")
        } catch {
            if case .tooLarge = error { return (true, "\(error)") }
            return (false, "\(error)")
        }
    }

    @Test("fuzzdb lottapixel.jpg (64250x64250 in 4.8 KB) is refused as too large")
    func lottapixel() throws {
        let source = try loadSource(Paths.corpusFile("edge-cases", "fuzzdb/lottapixel.jpg"))
        let start = Date()
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer().render(source, request: try! Sample.request("large"))
        }
        #expect(refused, "expected .tooLarge, got \(got)")
        #expect(Date().timeIntervalSince(start) < 2, "refusal took \(Date().timeIntervalSince(start)) s")
    }

    /// A PNG whose IHDR claims `width`×`height` but that holds a single row of data.
    static func forgedPNG(width: UInt32, height: UInt32) -> [UInt8] {
        PNGBuilder.png(width: width, height: height, bitDepth: 8, colorType: 2, rows: [[UInt8](repeating: 0x80, count: 3 * 16)])
    }

    @Test("the test's PNG writer makes valid PNGs (checked by Pillow)")
    func pngBuilderIsValid() throws {
        let rows: [[UInt8]] = (0..<8).map { y in (0..<8).flatMap { x -> [UInt8] in [UInt8(x * 32), UInt8(y * 32), 200] } }
        let bytes = PNGBuilder.png(width: 8, height: 8, bitDepth: 8, colorType: 2, rows: rows)
        let seen = try Python.pillowSize(of: bytes)
        #expect(seen.width == 8 && seen.height == 8 && seen.format == "PNG")
        let image = try Thumbnailer().render(SourceBytes(bytes), request: Sample.request("large")).pixels
        #expect(image.width == 8 && Pixels.rgb(image, x: 3, y: 5) == (96, 160, 200, 255))
    }

    @Test("a forged PNG header is refused before any pixel buffer is allocated",
          arguments: [(UInt32(70_000), UInt32(70_000)), (60_000, 60_000), (65_500, 4_000)])
    func forgedPNGHeader(_ width: UInt32, _ height: UInt32) throws {
        let source = SourceBytes(Self.forgedPNG(width: width, height: height))
        #expect(source.format == .png)
        let start = Date()
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer().render(source, request: try! Sample.request("large"))
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(refused, "\(width)x\(height): expected .tooLarge, got \(got)")
        #expect(elapsed < 2, "\(width)x\(height): took \(elapsed) s — was the image decoded?")
    }

    @Test("the forged 70000x70000 PNG through the CLI: exit 65, small RSS")
    func forgedPNGThroughCLI() throws {
        let scratch = try ScratchDirectory("forged")
        defer { scratch.remove() }
        let folder = scratch.path
        let input = folder + "/forged.png"
        try Data(Self.forgedPNG(width: 70_000, height: 70_000)).write(to: URL(fileURLWithPath: input))
        let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", "large", "--out-dir", folder])
        #expect(result.exitCode == 65, "\(result.summary)")
        #expect(result.maxRSSBytes < 200 << 20, "peak RSS \(result.maxRSSBytes >> 20) MB")
        #expect(folderContents(folder) == ["forged.png"])
    }

    @Test("a cancelled render throws .cancelled, for JPEG and PNG",
          arguments: [("exif-orientation", "Landscape_1.jpg"), ("pngsuite", "basn2c08.png"), ("pngsuite", "basi2c08.png")])
    func cancellation(_ set: String, _ file: String) throws {
        let source = try loadSource(Paths.corpusFile(set, file))
        do {
            _ = try Thumbnailer().render(source, request: Sample.request("large"), isCancelled: { true })
            Issue.record("\(file): rendered despite cancellation")
        } catch let error as ImagingError {
            #expect(error == .cancelled, "\(file): \(error)")
        }
    }

    @Test("lowered limits refuse a normal photo", arguments: ["maxPixels", "maxDimension", "maxFileBytes"])
    func loweredLimits(_ which: String) throws {
        var limits = ImageLimits()
        switch which {
        case "maxPixels": limits.maxPixels = 1_000_000 // the photo is 1800x1200 = 2.16 MP
        case "maxDimension": limits.maxDimension = 1000
        default: limits.maxFileBytes = 100_000
        }
        let source = try loadSource(Paths.corpusFile("exif-orientation", "Landscape_1.jpg"))
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: limits).render(source, request: try! Sample.request("large"))
        }
        #expect(refused, "\(which) lowered: expected .tooLarge, got \(got)")
        // A PNG too (its dimension limit goes through libpng's user limits).
        let png = try loadSource(Paths.corpusFile("pngsuite", "basn2c08.png")) // 32x32, 1 KB-ish
        var pngLimits = ImageLimits()
        switch which {
        case "maxPixels": pngLimits.maxPixels = 1000
        case "maxDimension": pngLimits.maxDimension = 16
        default: pngLimits.maxFileBytes = 100
        }
        let (pngRefused, pngGot) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: pngLimits).render(png, request: try! Sample.request("large"))
        }
        #expect(pngRefused, "\(which) lowered, 32x32 PNG: expected .tooLarge, got \(pngGot)")
        // And the same photo passes with the defaults.
        #expect(throws: Never.self) { _ = try Thumbnailer().render(source, request: try Sample.request("large")) }
    }

    @Test("a corpus progressive JPEG is refused with maxProgressiveScans = 2")
    func progressiveCorpusFile() throws {
        // (libjpeg-turbo's testimgint.jpg is baseline, with a single scan: use a real progressive file.)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Paths.corpusFile("edge-cases", "image-rs/images/jpg/progressive/cat.jpg"))))
        #expect(Self.scanCount(bytes) > 2)
        let source = SourceBytes(bytes)
        let request = try Sample.request("large")
        var limits = ImageLimits()
        limits.maxProgressiveScans = 2
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: limits).render(source, request: request)
        }
        #expect(refused, "cat.jpg (\(Self.scanCount(bytes)) scans) with maxProgressiveScans = 2: expected .tooLarge, got \(got)")
        #expect(throws: Never.self) { _ = try Thumbnailer().render(source, request: request) }
    }

    static func scanCount(_ bytes: [UInt8]) -> Int {
        var scans = 0
        for i in 0..<(bytes.count - 1) where bytes[i] == 0xFF && bytes[i + 1] == 0xDA { scans += 1 }
        return scans
    }

    /// A progressive JPEG with exactly 100 scans (cjpeg's maximum): the DC scan, then AC
    /// coefficients 1-32 of each component one at a time, then 33-63 of each.
    static func hundredScanJPEG() throws -> [UInt8] {
        let cjpeg = ["/usr/bin/cjpeg", "/usr/local/bin/cjpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tool = try #require(cjpeg, "cjpeg not found: install libjpeg-turbo-progs")
        let scratch = try ScratchDirectory("scans")
        defer { scratch.remove() }
        let folder = scratch.path
        var script = ["0,1,2: 0-0, 0, 0;"]
        for c in 0...2 {
            for k in 1...32 { script.append("\(c): \(k)-\(k), 0, 0;") }
            script.append("\(c): 33-63, 0, 0;")
        }
        try script.joined(separator: "\n").write(toFile: folder + "/scans.txt", atomically: true, encoding: .utf8)
        let (w, h) = (64, 48)
        var ppm = Array("P6\n\(w) \(h)\n255\n".utf8)
        for y in 0..<h { for x in 0..<w { ppm += [UInt8(x * 4), UInt8(y * 5), UInt8((x + y) * 2)] } }
        try Data(ppm).write(to: URL(fileURLWithPath: folder + "/in.ppm"))
        let result = try ChildProcess.run(tool, ["-scans", folder + "/scans.txt", "-outfile", folder + "/out.jpg", folder + "/in.ppm"],
                                          timeout: 20)
        try #require(result.exitCode == 0, "cjpeg failed: \(result.summary)")
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/out.jpg")))
    }

    /// The scans of `jpeg` repeated `times` times before EOI: libjpeg only warns about the bogus
    /// progression and keeps decoding, which is how a small file makes a decoder do unbounded work.
    static func repeatingScans(_ jpeg: [UInt8], times: Int) throws -> [UInt8] {
        let firstScan = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA })
        let end = try #require((0..<(jpeg.count - 1)).last { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xD9 })
        // Include the tables (DHT) written just before the first scan in each repeat.
        var start = firstScan
        var marker = 2
        while marker + 4 < firstScan {
            guard jpeg[marker] == 0xFF else { break }
            let length = Int(jpeg[marker + 2]) << 8 | Int(jpeg[marker + 3])
            if jpeg[marker + 1] == 0xC4 && marker + 2 + length == firstScan { start = marker }
            marker += 2 + length
        }
        let body = Array(jpeg[start..<end])
        return Array(jpeg[..<start]) + Array(repeating: body, count: times).flatMap { $0 } + [0xFF, 0xD9]
    }

    @Test("a progressive JPEG with too many scans is refused; exactly the limit passes")
    func tooManyScans() throws {
        let jpeg = try Self.hundredScanJPEG()
        #expect(Self.scanCount(jpeg) == 100, "cjpeg wrote \(Self.scanCount(jpeg)) scans")
        let request = try Sample.request("large")
        let source = SourceBytes(jpeg)
        var limits = ImageLimits()
        limits.maxProgressiveScans = 100
        #expect(throws: Never.self, "exactly 100 scans with maxProgressiveScans = 100 must render") {
            let image = try Thumbnailer(limits: limits).render(source, request: request)
            #expect(image.pixels.width == 64 && image.pixels.height == 48)
        }
        limits.maxProgressiveScans = 99
        let (refusedBelow, gotBelow) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: limits).render(source, request: request)
        }
        #expect(refusedBelow, "100 scans, maxProgressiveScans = 99: expected .tooLarge, got \(gotBelow)")

        // 300 scans (the 100 repeated) against the default limit of 256.
        let repeated = try Self.repeatingScans(jpeg, times: 3)
        #expect(Self.scanCount(repeated) == 300)
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer().render(SourceBytes(repeated), request: request)
        }
        #expect(refused, "300 scans with the default limit (256): expected .tooLarge, got \(got)")
    }
}
