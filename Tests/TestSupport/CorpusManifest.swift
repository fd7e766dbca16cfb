import Foundation

/// The corpus's manifests, one row a file: `manifest.tsv` (the JPEG and PNG sets, judged by
/// JPEG and PNG decoders) and `formats-manifest.tsv` (WebP, GIF, HEIF, AVIF). Their columns are
/// found by the names of the header line. Each is read once; a missing, empty or malformed
/// manifest is a `TestFailure`, never an empty list.
public enum CorpusManifest {
    /// One row. manifest.tsv's columns: set, file, bytes, sha256_16, format, dims, status, expect,
    /// decoder_detail, png_classic, pngcheck, djpeg_ljt3.2, pillow_info, note; formats-manifest.tsv's:
    /// set, file, bytes, sha, format, dims, status, expect, detail.
    public struct Row: Sendable, Hashable, CustomStringConvertible {
        /// The folder under the corpus: "pngsuite", "formats/webp".
        public var set: String
        /// The name inside `set` (it may hold folders: "exif-py/heic_hdlr_box.jpg").
        public var file: String
        public var bytes: Int?
        public var sha: String
        /// As the manifest's tool named it: JPEG, PNG, MPO, WEBP, GIF, HEIF, AVIF...
        public var format: String
        /// "640x480", "100x100 SOF3" (a note after the size), or "-".
        public var dims: String
        /// OK, WARN or ERROR.
        public var status: String
        /// "valid", "expect-…", "EXIF orientation 6"...
        public var expect: String
        /// decoder_detail (manifest.tsv) or detail (formats-manifest.tsv).
        public var detail: String
        /// manifest.tsv only ("" in formats-manifest.tsv).
        public var pngClassic: String
        public var pngcheck: String
        public var djpeg: String
        /// Pillow's view ("orient=6 ..."): manifest.tsv only.
        public var pillowInfo: String
        public var note: String

        /// "set/file", relative to the corpus.
        public var relativePath: String { self.set + "/" + file }
        /// The file's path.
        public var path: String { TestPaths.corpusFile(relativePath) }
        public var description: String { relativePath }

        /// The stored size of `dims` (its first word, "WxH"), nil when it has none.
        public var width: Int? { sides.count == 2 ? sides[0] : nil }
        public var height: Int? { sides.count == 2 ? sides[1] : nil }
        private var sides: [Int?] {
            (dims.split(separator: " ").first.map(String.init) ?? "").split(separator: "x").map { Int($0) }
        }

        /// 12-bit and lossless JPEGs: valid files that an 8-bit libjpeg may or may not decode.
        public var isHighPrecisionJPEG: Bool { detail.contains("precision 12") || detail.contains("SOF type 0xc3") }
    }

    /// `manifest.tsv`: the JPEG and PNG sets.
    public static func jpegAndPNG() throws(TestFailure) -> [Row] { try mainRows.get() }

    /// `formats-manifest.tsv`: WebP, GIF, HEIF and AVIF.
    public static func otherFormats() throws(TestFailure) -> [Row] { try formatRows.get() }

    /// `formats-next-manifest.tsv`: JPEG XL, TIFF and HDR files (sets `formats-next/jxl`, `…/tiff`,
    /// `…/hdr`); OK, EITHER (decoders disagree: a thumbnail or a clean refusal) or ERROR.
    public static func nextFormats() throws(TestFailure) -> [Row] { try nextRows.get() }

    /// `media-manifest.tsv`: videos, PDFs, SVGs and camera RAW (sets `media/video`, `media/pdf`,
    /// `media/svg`, `media/raw`); OK, EITHER or ERROR.
    public static func media() throws(TestFailure) -> [Row] { try mediaRows.get() }

    private static let mediaRows = Result { () throws(TestFailure) in try load("media-manifest.tsv", setFolder: "media/") }
    private static let mainRows = Result { () throws(TestFailure) in try load("manifest.tsv") }
    private static let nextRows = Result { () throws(TestFailure) in try load("formats-next-manifest.tsv", setFolder: "formats-next/") }
    private static let formatRows = Result { () throws(TestFailure) in try load("formats-manifest.tsv") }

    /// Reads and parses `name` in the corpus.
    /// `setFolder` goes before each row's set (formats-next's sets are folders of `formats-next/`).
    static func load(_ name: String, setFolder: String = "") throws(TestFailure) -> [Row] {
        let path = TestPaths.corpusFile(name)
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw TestFailure("cannot read the corpus manifest \(path) (the corpus is ../shared/corpus beside the package): \(error)")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard !lines.isEmpty else { throw TestFailure("\(path) is empty") }
        let header = lines.removeFirst().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        func column(_ names: String...) throws(TestFailure) -> Int {
            guard let index = header.firstIndex(where: { names.contains($0) }) else {
                throw TestFailure("\(path): no column \(names.joined(separator: " or ")) in its header \(header)")
            }
            return index
        }
        let (set, file, bytes, sha, format, dims) = (try column("set"), try column("file"), try column("bytes"),
                                                     try column("sha256_16", "sha"), try column("format"), try column("dims"))
        let (status, detail) = (try column("status"), try column("decoder_detail", "detail"))
        // formats-next-manifest.tsv has no expect column: its status says it all.
        let expect = header.firstIndex(of: "expect")
        let optional = { (name: String) in header.firstIndex(of: name) }
        let (pngClassic, pngcheck, djpeg, pillowInfo, note) = (optional("png_classic"), optional("pngcheck"), optional("djpeg_ljt3.2"),
                                                               optional("pillow_info"), optional("note"))
        let required = [set, file, bytes, sha, format, dims, status, detail].max() ?? 0
        var rows: [Row] = []
        for (number, line) in lines.enumerated() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > required else {
                throw TestFailure("\(path), line \(number + 2): \(fields.count) columns, the header has \(header.count)")
            }
            let field = { (index: Int?) in index.flatMap { $0 < fields.count ? fields[$0] : nil } ?? "" }
            rows.append(Row(set: setFolder + fields[set], file: fields[file], bytes: Int(fields[bytes]), sha: fields[sha], format: fields[format],
                            dims: fields[dims], status: fields[status], expect: field(expect), detail: fields[detail],
                            pngClassic: field(pngClassic), pngcheck: field(pngcheck), djpeg: field(djpeg),
                            pillowInfo: field(pillowInfo), note: field(note)))
        }
        guard !rows.isEmpty else { throw TestFailure("\(path) has a header and no rows") }
        return rows
    }
}
