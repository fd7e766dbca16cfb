import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// Progressive JPEGs for the scan-selection tests: the corpus's (found by their SOF2 marker) and
/// a few made here with cjpeg, jpegtran and Pillow from a corpus photo, for what the corpus lacks:
/// restart intervals, DC successive approximation in non-interleaved scans, 4:2:2 and 4:4:0, gray,
/// CMYK, and a 12-MP real photo.
enum ProgressiveFixtures {
    /// The frame marker (SOF0 0xC0, SOF2 0xC2, ...) of a JPEG, found by walking its marker segments.
    static func frameMarker(_ bytes: [UInt8]) -> UInt8? {
        var at = 2
        while at + 4 <= bytes.count, bytes[at] == 0xFF {
            let marker = bytes[at + 1]
            if marker == 0xFF { at += 1; continue }
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) { return marker }
            at += 2 + (Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
        }
        return nil
    }

    static func bytes(_ path: String) -> [UInt8] {
        (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? []
    }

    /// Manifest rows of the given status whose bytes are a progressive (SOF2) JPEG.
    static func corpus(status: String) throws -> [CorpusManifest.Row] {
        try Manifest.with(status: status).filter { entry in
            (entry.format == "JPEG" || entry.format == "MPO") && frameMarker(bytes(entry.path)) == 0xC2
        }
    }

    /// The offsets of every SOS marker.
    static func scanOffsets(_ bytes: [UInt8]) -> [Int] {
        (0..<max(0, bytes.count - 1)).filter { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA }
    }

    /// Names of the generated files (test arguments are listed before the files exist).
    static let generatedNames = ["420", "420-restart", "refine-scans", "gray", "422", "440", "444", "cmyk", "photo-12mp"]

    /// A DC scan in successive approximation (luma alone, then chroma interleaved), refined in two
    /// steps, luma's AC in two spectral bands, then refined.
    static let refineScript = """
        0: 0-0, 0, 2;
        1,2: 0-0, 0, 1;
        0: 0-0, 2, 1;
        0: 1-9, 0, 1;
        0: 10-63, 0, 1;
        1: 1-63, 0, 0;
        2: 1-63, 0, 0;
        0: 1-63, 1, 0;
        0,1,2: 0-0, 1, 0;
        """

    /// The generated files by name, made once into a temporary folder (removed after reading).
    static let generated: Result<[String: [UInt8]], TestFailure> = {
        do {
            return .success(try make())
        } catch let failure as TestFailure {
            return .failure(failure)
        } catch {
            return .failure(TestFailure("\(error)"))
        }
    }()

    static func generated(_ name: String) throws -> [UInt8] {
        let files = try generated.get()
        return try #require(files[name], "no generated file \(name)")
    }

    private static func tool(_ name: String) throws -> String {
        guard let path = ["/usr/bin/\(name)", "/usr/local/bin/\(name)"].first(where: FileManager.default.isExecutableFile)
        else { throw TestFailure("\(name) not found: install libjpeg-turbo-progs") }
        return path
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try ChildProcess.run(tool, arguments, timeout: 20)
        guard result.exitCode == 0 else { throw TestFailure("\(tool) \(arguments): \(result.summary)") }
    }

    private static func make() throws -> [String: [UInt8]] {
        let (cjpeg, djpeg, jpegtran) = (try tool("cjpeg"), try tool("djpeg"), try tool("jpegtran"))
        let scratch = try ScratchDirectory("progressive")
        defer { scratch.remove() }
        let folder = scratch.path
        let photo = Paths.corpusFile("large-photos", "exif-samples__mobile_jolla.jpg")
        let ppm = folder + "/photo.ppm"
        try run(djpeg, ["-scale", "1/4", "-ppm", "-outfile", ppm, photo]) // 816x612
        try refineScript.write(toFile: folder + "/refine.txt", atomically: true, encoding: .utf8)
        let variants: [(String, [String])] = [
            ("420", ["-progressive"]),
            ("420-restart", ["-progressive", "-restart", "1"]),
            ("refine-scans", ["-scans", folder + "/refine.txt", "-restart", "2"]),
            ("gray", ["-progressive", "-grayscale"]),
            ("422", ["-progressive", "-sample", "2x1"]),
            ("440", ["-progressive", "-sample", "1x2"]),
            ("444", ["-progressive", "-sample", "1x1", "-optimize"]),
        ]
        var files: [String: [UInt8]] = [:]
        for (name, options) in variants {
            try run(cjpeg, options + ["-outfile", "\(folder)/\(name).jpg", ppm])
            files[name] = bytes("\(folder)/\(name).jpg")
        }
        // A 4000x3000 camera JPEG made progressive losslessly (libjpeg's default progression).
        try run(jpegtran, ["-progressive", "-outfile", folder + "/photo-12mp.jpg",
                           Paths.corpusFile("large-photos", "exif-py__Xiaomi_Mi_9T_KeyError.jpg")])
        files["photo-12mp"] = bytes(folder + "/photo-12mp.jpg")
        let cmyk = folder + "/cmyk.jpg"
        _ = try Python.run("""
            import sys
            from PIL import Image
            Image.open(sys.argv[1]).convert('CMYK').save(sys.argv[2], progressive=True, quality=85)
            """, [ppm, cmyk])
        files["cmyk"] = bytes(cmyk)
        for (name, file) in files where frameMarker(file) != 0xC2 {
            throw TestFailure("\(name) is not progressive")
        }
        return files
    }
}
