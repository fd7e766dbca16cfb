/// What a source is, by its content (magic bytes, the ISO-BMFF `ftyp` brands), never by its name.
package enum SourceFormat: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, webp, gif, heif, avif, tiff, jxl

    /// HEIF brands (ISO/IEC 23008-12): HEVC stills and sequences, and the generic image brands.
    static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1", "mif2"]
    static let avifBrands: Set<String> = ["avif", "avis"]

    /// The format of `bytes`, or nil when it is none thumbd reads.
    package static func sniff(_ bytes: UnsafeRawBufferPointer) -> SourceFormat? {
        let count = bytes.count
        func matches(_ offset: Int, _ text: String) -> Bool {
            let ascii = Array(text.utf8)
            guard offset + ascii.count <= count else { return false }
            return ascii.indices.allSatisfy { bytes[offset + $0] == ascii[$0] }
        }
        if count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF { return .jpeg }
        // Only "\x89PNG": libpng checks the rest of the signature and names the damage
        // (a file mangled by a text-mode transfer, say).
        if count >= 4, bytes[0] == 0x89, matches(1, "PNG") { return .png }
        if matches(0, "RIFF"), matches(8, "WEBP") { return .webp }
        // "GIF8": giflib tells 87a from 89a and names a damaged signature.
        if matches(0, "GIF8") { return .gif }
        if matches(4, "ftyp") { return brandFormat(bytes) }
        // Byte order, then 42 (classic TIFF) or 43 (BigTIFF) in that order.
        if count >= 4, matches(0, "II"), (bytes[2] == 42 || bytes[2] == 43), bytes[3] == 0 { return .tiff }
        if count >= 4, matches(0, "MM"), bytes[2] == 0, (bytes[3] == 42 || bytes[3] == 43) { return .tiff }
        // JPEG XL: a bare codestream (FF 0A) or the container's signature box
        // (00 00 00 0C "JXL " 0D 0A 87 0A), as libjxl's JxlSignatureCheck tells them.
        if count >= 2, bytes[0] == 0xFF, bytes[1] == 0x0A { return .jxl }
        if count >= 12, matches(4, "JXL "),
           [0x00, 0x00, 0x00, 0x0C].enumerated().allSatisfy({ bytes[$0.offset] == $0.element }),
           [0x0D, 0x0A, 0x87, 0x0A].enumerated().allSatisfy({ bytes[8 + $0.offset] == $0.element }) { return .jxl }
        return nil
    }

    /// An `ftyp` box: the major brand, then compatible brands to the end of the box (bounded by
    /// the file). AVIF wins only when no HEVC brand is major: an AVIF-compatible HEIC is HEVC.
    private static func brandFormat(_ bytes: UnsafeRawBufferPointer) -> SourceFormat? {
        guard bytes.count >= 12 else { return nil }
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
        if avifBrands.contains(major) { return .avif }
        if heifBrands.contains(major) && major != "mif1" && major != "msf1" && major != "mif2" { return .heif }
        if brands.contains(where: avifBrands.contains) { return .avif }
        if brands.contains(where: heifBrands.contains) { return .heif }
        return nil
    }

    package var name: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .webp: "WebP"
        case .gif: "GIF"
        case .heif: "HEIF"
        case .avif: "AVIF"
        case .tiff: "TIFF"
        case .jxl: "JPEG XL"
        }
    }
}
