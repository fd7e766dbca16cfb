/// What a source is, by its content (magic bytes, the ISO-BMFF `ftyp` brands), never by its name.
/// Every fact about a format is one row of `SourceFormat.table` (`SourceFormatRow`): adding a
/// format is a loader file and a row.
package enum SourceFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, gif, heif, avif, tiff, jxl
    /// ISO base media video: MP4, MOV (QuickTime), M4V, 3GP (FFmpeg's `mov` demuxer).
    case mp4
    /// Matroska and WebM (FFmpeg's `matroska` demuxer).
    case matroska
    /// AVI (RIFF `AVI `).
    case avi

    /// This format's row of the table.
    package var row: SourceFormatRow { Self.rows[self]! }

    package var name: String { row.name }

    private static let rows: [SourceFormat: SourceFormatRow] = Dictionary(uniqueKeysWithValues: table.map { ($0.format, $0) })

    /// The format of `bytes`, or nil when it is none thumbd reads: the first row, in table
    /// order, whose leading bytes match.
    package static func sniff(_ bytes: UnsafeRawBufferPointer) -> SourceFormat? {
        let head = LeadingBytes(bytes)
        return table.first { $0.matches(head) }?.format
    }
}

/// What kind of picture a format holds: how its thumbnail is made and what a client may show
/// beside it (a play badge on a video).
package enum SourceMedia: String, Sendable, CaseIterable {
    /// One picture (a multi-page TIFF's first page).
    case still
    /// A still or an animation (GIF, WebP): `animation: keep` kinds keep it moving.
    case animated
    /// A clip: a poster frame, or a sampled preview for `keep` kinds.
    case video
    /// Vector art, drawn at the thumbnail's size.
    case vector
    /// A document's first page.
    case document
}

/// One format thumbd reads: the one place its names, leading bytes and loader are declared. The
/// scanner and watcher (`extensions`), the sniffing of extension-less names (`matches`), the
/// listing (`media`), the worker protocol (`wireTag`), the fuzz catalogue (`fuzzTargets`) and the
/// docs' format list read it; `SourceFormatTableTests` fails when one of them misses a row.
package struct SourceFormatRow: Sendable {
    package let format: SourceFormat
    /// As people name it ("JPEG XL").
    package let name: String
    /// File-name extensions, lowercase, without the dot; the first is the usual one.
    package let extensions: [String]
    /// IANA media types; the first is the canonical one.
    package let mediaTypes: [String]
    package let media: SourceMedia
    /// The byte of the worker protocol that names this format: stable, never reused.
    package let wireTag: UInt8
    /// The fuzz targets that feed this format's bytes to its loader (`Fuzz/Targets/NAME`).
    package let fuzzTargets: [String]
    /// The configuration keys that bound this format's decode (`limits.*`, `formats.*`).
    package let limitKeys: [String]
    /// Whether the file stays in its file and is read where the decoder asks (`SourceFileWindow`):
    /// TIFFs from `SourceFileWindow.minimumBytes` (libtiff reads strips), videos always (FFmpeg
    /// reads boxes and packets: a poster needs a few megabytes of a clip of gigabytes).
    package let staysInFile: StaysInFile
    /// Whether only the sandboxed worker may decode it (a decoder this large and this exposed
    /// never runs in the daemon: `ImageLimits.decodesSandboxOnlyFormats`).
    package let sandboxOnly: Bool
    let matches: @Sendable (LeadingBytes) -> Bool

    package enum StaysInFile: Sendable, Equatable {
        case never
        case fromBytes(Int)
        case always
    }
}

extension SourceFormat {
    /// Every format, in sniffing order (a JPEG XL codestream's FF 0A is no JPEG's FF D8 FF; the
    /// HEIF and AVIF brands are taken before any other `ftyp` is video).
    package static let table: [SourceFormatRow] = [
        SourceFormatRow(format: .jpeg, name: "JPEG", extensions: ["jpg", "jpeg"], mediaTypes: ["image/jpeg"], media: .still,
                        wireTag: 0, fuzzTargets: ["jpeg", "jpeg-dc-scans"],
                        limitKeys: ["maxPixels", "maxDimension", "maxFileBytes", "maxProgressiveScans", "maxDecoderMemoryBytes"],
                        staysInFile: .never, sandboxOnly: false) { $0.starts(with: [0xFF, 0xD8, 0xFF]) },
        // Only "\x89PNG": libpng checks the rest of the signature and names the damage (a file
        // mangled by a text-mode transfer, say).
        SourceFormatRow(format: .png, name: "PNG", extensions: ["png"], mediaTypes: ["image/png"], media: .still,
                        wireTag: 1, fuzzTargets: ["png"], limitKeys: ["maxPixels", "maxDimension", "maxFileBytes"],
                        staysInFile: .never, sandboxOnly: false) { $0.starts(with: [0x89]) && $0.has("PNG", at: 1) },
        SourceFormatRow(format: .webp, name: "WebP", extensions: ["webp"], mediaTypes: ["image/webp"], media: .animated,
                        wireTag: 2, fuzzTargets: ["webp"],
                        limitKeys: ["maxPixels", "maxDimension", "maxFileBytes", "maxAnimationFrames", "maxAnimationPixels"],
                        staysInFile: .never, sandboxOnly: false) { $0.has("RIFF", at: 0) && $0.has("WEBP", at: 8) },
        // "GIF8": giflib tells 87a from 89a and names a damaged signature.
        SourceFormatRow(format: .gif, name: "GIF", extensions: ["gif"], mediaTypes: ["image/gif"], media: .animated,
                        wireTag: 3, fuzzTargets: ["gif"],
                        limitKeys: ["maxPixels", "maxDimension", "maxFileBytes", "maxAnimationFrames", "maxAnimationPixels"],
                        staysInFile: .never, sandboxOnly: false) { $0.has("GIF8", at: 0) },
        SourceFormatRow(format: .heif, name: "HEIF", extensions: ["heic", "heif"], mediaTypes: ["image/heic", "image/heif"], media: .still,
                        wireTag: 4, fuzzTargets: ["heif"], limitKeys: ["maxPixels", "maxDimension", "maxFileBytes"],
                        staysInFile: .never, sandboxOnly: false) { $0.isoBrand == .heif },
        SourceFormatRow(format: .avif, name: "AVIF", extensions: ["avif"], mediaTypes: ["image/avif"], media: .still,
                        wireTag: 5, fuzzTargets: ["heif"], limitKeys: ["maxPixels", "maxDimension", "maxFileBytes"],
                        staysInFile: .never, sandboxOnly: false) { $0.isoBrand == .avif },
        // Byte order, then 42 (classic TIFF) or 43 (BigTIFF) in that order.
        SourceFormatRow(format: .tiff, name: "TIFF", extensions: ["tif", "tiff"], mediaTypes: ["image/tiff"], media: .still,
                        wireTag: 6, fuzzTargets: ["tiff"], limitKeys: ["maxPixels", "maxDimension", "maxFileBytes"],
                        staysInFile: .fromBytes(SourceFileWindow.minimumBytes), sandboxOnly: false) { head in
            (head.has("II", at: 0) && (head.starts(with: [0x49, 0x49, 42, 0]) || head.starts(with: [0x49, 0x49, 43, 0])))
                || (head.has("MM", at: 0) && (head.starts(with: [0x4D, 0x4D, 0, 42]) || head.starts(with: [0x4D, 0x4D, 0, 43])))
        },
        // A bare codestream (FF 0A) or the container's signature box (00 00 00 0C "JXL " 0D 0A
        // 87 0A), as libjxl's JxlSignatureCheck tells them.
        SourceFormatRow(format: .jxl, name: "JPEG XL", extensions: ["jxl"], mediaTypes: ["image/jxl"], media: .still,
                        wireTag: 7, fuzzTargets: ["jxl"], limitKeys: ["maxPixels", "maxDimension", "maxFileBytes"],
                        staysInFile: .never, sandboxOnly: false) { head in
            head.starts(with: [0xFF, 0x0A])
                || head.starts(with: [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A])
        },
        // Any other `ftyp` (isom, mp41, mp42, qt, M4V, 3gp…): FFmpeg's mov demuxer reads them
        // all, and one holding no video (an M4A) is refused as such when opened.
        SourceFormatRow(format: .mp4, name: "MP4", extensions: ["mp4", "m4v", "mov", "3gp"],
                        mediaTypes: ["video/mp4", "video/quicktime", "video/x-m4v", "video/3gpp"], media: .video,
                        wireTag: 8, fuzzTargets: ["video-mp4", "video-h264", "video-hevc", "video-av1"], limitKeys: VideoLimits.keys,
                        staysInFile: .always, sandboxOnly: true) { head in
            // An old QuickTime file may begin with its movie, a `wide` pad or its media data.
            head.isoBrand == .video || head.has("moov", at: 4) || head.has("wide", at: 4) || head.has("mdat", at: 4)
        },
        // EBML's magic; FFmpeg's matroska demuxer takes the "matroska" and "webm" doc types.
        SourceFormatRow(format: .matroska, name: "Matroska", extensions: ["mkv", "webm"], mediaTypes: ["video/x-matroska", "video/webm"],
                        media: .video, wireTag: 9, fuzzTargets: ["video-matroska", "video-vp8", "video-vp9"], limitKeys: VideoLimits.keys,
                        staysInFile: .always, sandboxOnly: true) { $0.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) },
        SourceFormatRow(format: .avi, name: "AVI", extensions: ["avi"], mediaTypes: ["video/x-msvideo"], media: .video,
                        wireTag: 10, fuzzTargets: ["video-avi", "video-mpeg4", "video-mjpeg"], limitKeys: VideoLimits.keys,
                        staysInFile: .always, sandboxOnly: true) { $0.has("RIFF", at: 0) && $0.has("AVI ", at: 8) },
    ]

    /// The format whose wire tag is `tag`, nil for none.
    package init?(wireTag tag: UInt8) {
        guard let row = Self.table.first(where: { $0.wireTag == tag }) else { return nil }
        self = row.format
    }

    /// What the first bytes of the open file on `descriptor` say it is, without moving its offset.
    package static func sniff(descriptor: Int32) -> SourceFormat? { SourceFileWindow.sniff(descriptor) }

    /// The format a file name's extension names (any case), nil for none.
    package static func named(extension ext: some StringProtocol) -> SourceFormat? {
        let lowered = ext.lowercased()
        return table.first { $0.extensions.contains(lowered) }?.format
    }

    /// The formats' names as an error lists them ("JPEG, PNG, … or AVI").
    package static var listedNames: String {
        let names = table.map(\.name)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// Every extension of the table, lowercase.
    package static let extensions: Set<String> = Set(table.flatMap(\.extensions))
}

/// The first bytes of a file, as the rows' `matches` read them: every read is bounds-checked.
package struct LeadingBytes {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func starts(with prefix: [UInt8]) -> Bool {
        prefix.count <= bytes.count && prefix.indices.allSatisfy { bytes[$0] == prefix[$0] }
    }

    func has(_ text: String, at offset: Int) -> Bool {
        let ascii = Array(text.utf8)
        guard offset >= 0, offset + ascii.count <= bytes.count else { return false }
        return ascii.indices.allSatisfy { bytes[offset + $0] == ascii[$0] }
    }

    enum ISOBrand { case heif, avif, video }

    /// HEIF brands (ISO/IEC 23008-12): HEVC stills and sequences, and the generic image brands.
    static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1", "mif2"]
    static let avifBrands: Set<String> = ["avif", "avis"]

    /// An `ftyp` box: the major brand, then compatible brands to the end of the box (bounded by
    /// the bytes). AVIF wins only when no HEVC brand is major: an AVIF-compatible HEIC is HEVC.
    /// Any other brand is video.
    var isoBrand: ISOBrand? {
        guard has("ftyp", at: 4), bytes.count >= 12 else { return nil }
        let declared = (0..<4).reduce(0) { $0 << 8 | Int(bytes[$1]) }
        let end = min(bytes.count, declared >= 16 ? declared : 16)
        func brand(at offset: Int) -> String {
            String(decoding: (offset..<offset + 4).map { bytes[$0] }, as: UTF8.self)
        }
        let major = brand(at: 8)
        var brands = [major]
        var offset = 16
        while offset + 4 <= end, brands.count < 64 {
            brands.append(brand(at: offset))
            offset += 4
        }
        if Self.avifBrands.contains(major) { return .avif }
        if Self.heifBrands.contains(major) && major != "mif1" && major != "msf1" && major != "mif2" { return .heif }
        if brands.contains(where: Self.avifBrands.contains) { return .avif }
        if brands.contains(where: Self.heifBrands.contains) { return .heif }
        return .video
    }
}
