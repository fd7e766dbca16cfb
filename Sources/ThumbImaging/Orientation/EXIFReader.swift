/// Reads the orientation tag from an EXIF (TIFF-structured) block, bounds-checked at every step:
/// camera EXIF is often broken, and a bad block must mean "no orientation", never a crash.
package enum EXIFReader {
    /// `tiff` starts at the TIFF header ("II*\0" or "MM\0*"), i.e. after JPEG's "Exif\0\0".
    package static func orientation(tiff: UnsafeRawBufferPointer) -> Orientation? {
        guard tiff.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ offset: Int) -> Int? {
            guard offset >= 0, offset + 2 <= tiff.count else { return nil }
            let a = Int(tiff[offset]), b = Int(tiff[offset + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ offset: Int) -> Int? {
            guard let low = u16(littleEndian ? offset : offset + 2),
                  let high = u16(littleEndian ? offset + 2 : offset) else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<count {
            let base = ifd + 2 + entry * 12
            guard let tag = u16(base) else { return nil }
            guard tag == 0x0112 else { continue }
            // SHORT (type 3), count 1: the value sits in the first two bytes of the value field.
            guard u16(base + 2) == 3, let value = u16(base + 8) else { return nil }
            return Orientation(rawValue: value)
        }
        return nil
    }
}
