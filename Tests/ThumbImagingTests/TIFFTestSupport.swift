import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The `tiff` rows of `formats-next-manifest.tsv` (columns set, file, bytes, sha256_16, format,
/// dims, status, detail, source), parsed here by the names of its header line.
struct TIFFManifestRow: Sendable, CustomStringConvertible {
    var file: String
    var dims: String
    var status: String
    var detail: String

    var path: String { TestPaths.corpusFile("formats-next/tiff/" + file) }
    var description: String { file }
    /// The displayed size (Orientation 5–8 already swapped), nil for "-".
    var displayed: (width: Int, height: Int)? {
        let sides = dims.split(separator: "x").compactMap { Int($0) }
        return sides.count == 2 ? (sides[0], sides[1]) : nil
    }

    static func all() throws -> [TIFFManifestRow] {
        let path = TestPaths.corpusFile("formats-next-manifest.tsv")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = lines.removeFirst()
        func column(_ name: String) throws -> Int { try #require(header.firstIndex(of: name), "\(path) has no column \(name)") }
        let (set, file, dims, status, detail) = (try column("set"), try column("file"), try column("dims"), try column("status"), try column("detail"))
        return lines.filter { $0.count == header.count && $0[set] == "tiff" }
            .map { TIFFManifestRow(file: $0[file], dims: $0[dims], status: $0[status], detail: $0[detail]) }
    }

    static func with(status: String) throws -> [TIFFManifestRow] { try all().filter { $0.status == status } }
}

enum TIFFTestSupport {
    /// A request for an output of exactly `width` × `height` (a fit box of the image's own
    /// displayed size: a pure decode, no resampling).
    static func request(width: Int, height: Int) throws -> ThumbnailRequest {
        let selection = try SlotSpec.parse("\(width)x\(height),fit")
        return ThumbnailRequest(kind: selection.kind, scale: 1)
    }

    /// A classic little-endian TIFF with one directory of `entries` (tag, type, count, value or
    /// offset; SHORT values sit in the low half), then `trailing` bytes at offset 8 + IFD size.
    static func tiff(_ entries: [(tag: UInt16, type: UInt16, count: UInt32, value: UInt32)], trailing: [UInt8] = []) -> [UInt8] {
        var bytes: [UInt8] = Array("II".utf8) + [42, 0] + le32(8)
        bytes += le16(UInt16(entries.count))
        for entry in entries.sorted(by: { $0.tag < $1.tag }) {
            bytes += le16(entry.tag) + le16(entry.type) + le32(entry.count) + le32(entry.value)
        }
        bytes += le32(0)
        return bytes + trailing
    }

    /// Where `trailing` starts in `tiff(entries, trailing:)`.
    static func trailingOffset(entryCount: Int) -> UInt32 { UInt32(8 + 2 + entryCount * 12 + 4) }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

    static let short: UInt16 = 3, long: UInt16 = 4

    /// `program arguments…`, failing the test with its output when it fails.
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> ChildProcess.Result {
        let result = try ChildProcess.run("/usr/bin/env", [program] + arguments, timeout: 300)
        try #require(result.exitCode == 0, "\(program) \(arguments): \(result.summary)")
        return result
    }

    /// A corpus photo of at least 2000 px a side, as the larger TIFFs' source.
    static let photo = TestPaths.corpusFile("large-photos/exif-samples__mobile_HMD_Nokia_8.3_5G.jpg")

    /// `vips thumbnail` of `path` at exactly `width` × `height`, as RGB bytes (Pillow reads its PNG).
    static func vipsThumbnail(_ path: String, width: Int, height: Int, in scratch: ScratchDirectory) throws -> [UInt8] {
        let out = scratch.path("vips-\(width)x\(height).png")
        try run("vips", ["thumbnail", path, out, "\(width)", "--height", "\(height)", "--size", "force"])
        let script = "import sys\nfrom PIL import Image\nsys.stdout.buffer.write(Image.open(sys.argv[1]).convert('RGB').tobytes())"
        return [UInt8](try Python.run(script, [out]))
    }
}
