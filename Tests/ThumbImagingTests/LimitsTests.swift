import Foundation
import Testing
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
        let rows = (0..<8).map { y in (0..<8).flatMap { x in [UInt8(x * 32), UInt8(y * 32), 200] } }
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
        let folder = try makeTemporaryFolder("forged")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let input = folder + "/forged.png"
        try Data(Self.forgedPNG(width: 70_000, height: 70_000)).write(to: URL(fileURLWithPath: input))
        let result = try ChildProcess.run(try requireThumbd(), ["render", input, "--slot", "large", "--out-dir", folder])
        #expect(result.exitCode == 65, "\(result.summary)")
        #expect(result.maxRSSBytes < 200 << 20, "peak RSS \(result.maxRSSBytes >> 20) MB")
        #expect(folderContents(folder) == ["forged.png"])
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
        // And the same photo passes with the defaults.
        #expect(throws: Never.self) { _ = try Thumbnailer().render(source, request: try Sample.request("large")) }
    }

    @Test("a corpus progressive JPEG is refused with maxProgressiveScans = 2")
    func progressiveCorpusFile() throws {
        let source = try loadSource(Paths.corpusFile("libjpeg-turbo-testimages", "testimgint.jpg"))
        var limits = ImageLimits()
        limits.maxProgressiveScans = 2
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: limits).render(source, request: try! Sample.request("large"))
        }
        #expect(refused, "expected .tooLarge, got \(got)")
        #expect(throws: Never.self) { _ = try Thumbnailer().render(source, request: try Sample.request("large")) }
    }

    /// A scan script with 380 scans (every AC coefficient of every component on its own, with one
    /// successive-approximation refinement), written with libjpeg-turbo's `cjpeg -scans`.
    static func manyScanJPEG() throws -> (bytes: [UInt8], scans: Int) {
        let cjpeg = ["/usr/bin/cjpeg", "/usr/local/bin/cjpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let tool = try #require(cjpeg, "cjpeg not found: install libjpeg-turbo-progs")
        let folder = try makeTemporaryFolder("scans")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var script = ["0,1,2: 0-0, 0, 1;"]
        for k in 1...63 { for c in 0...2 { script.append("\(c): \(k)-\(k), 0, 1;") } }
        script.append("0,1,2: 0-0, 1, 0;")
        for k in 1...63 { for c in 0...2 { script.append("\(c): \(k)-\(k), 1, 0;") } }
        try script.joined(separator: "\n").write(toFile: folder + "/scans.txt", atomically: true, encoding: .utf8)
        let (w, h) = (64, 48)
        var ppm = Array("P6\n\(w) \(h)\n255\n".utf8)
        for y in 0..<h { for x in 0..<w { ppm += [UInt8(x * 4), UInt8(y * 5), UInt8((x + y) * 2)] } }
        try Data(ppm).write(to: URL(fileURLWithPath: folder + "/in.ppm"))
        let result = try ChildProcess.run(tool, ["-scans", folder + "/scans.txt", "-outfile", folder + "/out.jpg", folder + "/in.ppm"])
        try #require(result.exitCode == 0, "cjpeg failed: \(result.summary)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/out.jpg")))
        // Count SOS markers (0xFFDA) to know the exact number of scans.
        var scans = 0
        for i in 0..<(bytes.count - 1) where bytes[i] == 0xFF && bytes[i + 1] == 0xDA { scans += 1 }
        return (bytes, scans)
    }

    @Test("a progressive JPEG with too many scans is refused; exactly the limit passes")
    func tooManyScans() throws {
        let made = try Self.manyScanJPEG()
        #expect(made.scans == 380, "cjpeg wrote \(made.scans) scans")
        let source = SourceBytes(made.bytes)
        let request = try Sample.request("large")
        let (refused, got) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer().render(source, request: request)
        }
        #expect(refused, "\(made.scans) scans with the default limit (256): expected .tooLarge, got \(got)")
        var limits = ImageLimits()
        limits.maxProgressiveScans = made.scans
        #expect(throws: Never.self, "exactly \(made.scans) scans with maxProgressiveScans = \(made.scans) must render") {
            let image = try Thumbnailer(limits: limits).render(source, request: request)
            #expect(image.pixels.width == 64 && image.pixels.height == 48)
        }
        limits.maxProgressiveScans = made.scans - 1
        let (refusedBelow, gotBelow) = Self.isTooLarge { () throws(ImagingError) in
            _ = try Thumbnailer(limits: limits).render(source, request: request)
        }
        #expect(refusedBelow, "maxProgressiveScans = \(made.scans - 1): expected .tooLarge, got \(gotBelow)")
    }
}
