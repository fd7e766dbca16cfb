import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The GIF rows of `formats-manifest.tsv`.
enum GIFCorpus {
    static func entries() throws -> [CorpusManifest.Row] { try CorpusManifest.otherFormats().filter { $0.set == "formats/gif" } }

    static func with(status: String) throws -> [CorpusManifest.Row] { try entries().filter { $0.status == status } }
}

/// Pillow's view of a GIF: `Image.open(path).convert('RGBA')` of frame 0 at full size.
enum GIFPillow {
    static func firstFrameRGBA(_ path: String) throws -> PixelBuffer {
        let script = """
            import sys, struct
            from PIL import Image
            im = Image.open(sys.argv[1]).convert('RGBA')
            sys.stdout.buffer.write(struct.pack('<II', *im.size) + im.tobytes())
            """
        let data = [UInt8](try Python.run(script, [path]))
        try #require(data.count >= 8)
        let width = data[0..<4].reversed().reduce(0) { $0 << 8 | Int($1) }
        let height = data[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
        try #require(data.count == 8 + width * height * 4, "Pillow wrote \(data.count) bytes for \(width)x\(height)")
        return PixelBuffer(width: width, height: height, channels: 4, bytes: Array(data[8...]))
    }

    /// Writes `bytes` to a scratch file for Pillow; removed by the caller.
    static func scratchFile(_ bytes: [UInt8]) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-gif-\(UUID()).gif")
        try Data(bytes).write(to: file)
        return file
    }
}

enum GIFPixels {
    /// Straight RGBA (or RGB) over white, as RGB bytes: how a transparent thumbnail looks on a page.
    static func overWhite(_ buffer: PixelBuffer) -> [UInt8] { buffer.flattened().bytes }

    /// Number of pixels whose alpha differs, or (both visible) whose colour differs.
    static func differingPixels(_ a: PixelBuffer, _ b: PixelBuffer) -> Int {
        let a = a.withAlpha(), b = b.withAlpha()
        var count = 0
        for pixel in 0..<min(a.width * a.height, b.width * b.height) {
            let at = pixel * 4
            if a.bytes[at + 3] != b.bytes[at + 3] { count += 1; continue }
            if a.bytes[at + 3] != 0 && a.bytes[at..<at + 3] != b.bytes[at..<at + 3] { count += 1 }
        }
        return count
    }
}

/// GIFs built byte by byte, for the behaviours the corpus lacks.
enum GIFBuilder {
    static func word(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }

    /// Header and logical screen descriptor, with a global colour map when `colors` is not nil
    /// (padded to a power of two).
    static func header(width: Int, height: Int, colors: [(UInt8, UInt8, UInt8)]?) -> [UInt8] {
        var out = Array("GIF89a".utf8) + word(width) + word(height)
        guard let colors else { return out + [0, 0, 0] }
        let bits = max(1, Int.bitWidth - (max(colors.count, 2) - 1).leadingZeroBitCount)
        out += [0x80 | UInt8(bits - 1), 0, 0]
        for index in 0..<(1 << bits) {
            let color = index < colors.count ? colors[index] : (0, 0, 0)
            out += [color.0, color.1, color.2]
        }
        return out
    }

    /// A Graphic Control Extension naming `transparent` (nil: none).
    static func graphicControl(transparent: Int?) -> [UInt8] {
        [0x21, 0xF9, 4, transparent == nil ? 0 : 1, 0, 0, UInt8(transparent ?? 0), 0]
    }

    static func comment(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [0x21, 0xFE] + (bytes.isEmpty ? [] : [UInt8(bytes.count)] + bytes) + [0]
    }

    /// An image descriptor and its LZW data for `indices` (8-bit code size; a clear code
    /// before every literal keeps the codes 9 bits wide: valid, if never compact).
    static func image(left: Int, top: Int, width: Int, height: Int, indices: [UInt8], interlaced: Bool = false) -> [UInt8] {
        var out: [UInt8] = [0x2C] + word(left) + word(top) + word(width) + word(height) + [interlaced ? 0x40 : 0]
        out += lzwBlocks(indices)
        return out
    }

    static func lzwBlocks(_ indices: [UInt8]) -> [UInt8] {
        var codes: [Int] = []
        for index in indices { codes += [256, Int(index)] }
        codes.append(257)
        var data: [UInt8] = []
        var accumulator = 0, bits = 0
        for code in codes {
            accumulator |= code << bits
            bits += 9
            while bits >= 8 { data.append(UInt8(accumulator & 0xFF)); accumulator >>= 8; bits -= 8 }
        }
        if bits > 0 { data.append(UInt8(accumulator & 0xFF)) }
        return subBlocks(data, codeSize: 8)
    }

    /// The code size byte, `data` in sub-blocks of at most 255 bytes, and the terminator.
    static func subBlocks(_ data: [UInt8], codeSize: Int) -> [UInt8] {
        var out: [UInt8] = [UInt8(codeSize)]
        var offset = 0
        while offset < data.count {
            let length = min(255, data.count - offset)
            out += [UInt8(length)] + data[offset..<offset + length]
            offset += length
        }
        return out + [0]
    }

    /// LZW data of root `codes` (each a literal of the table, which may exceed 255 when the code
    /// size is over 8) with minimum code size `codeSize`: a clear code first and again before the
    /// table would reach the next code width, so every code keeps the first width.
    static func wideLZWBlocks(_ codes: [Int], codeSize: Int) -> [UInt8] {
        let clear = 1 << codeSize
        var stream = [clear]
        for (index, code) in codes.enumerated() {
            if index > 0 && index % (clear - 8) == 0 { stream.append(clear) }
            stream.append(code)
        }
        stream.append(clear + 1)
        var data: [UInt8] = []
        var accumulator = 0, bits = 0
        for code in stream {
            accumulator |= code << bits
            bits += codeSize + 1
            while bits >= 8 { data.append(UInt8(accumulator & 0xFF)); accumulator >>= 8; bits -= 8 }
        }
        if bits > 0 { data.append(UInt8(accumulator & 0xFF)) }
        return subBlocks(data, codeSize: codeSize)
    }

    static let trailer: [UInt8] = [0x3B]
}

/// A GIF loader over bytes, with the default limits.
func gifLoader(_ bytes: [UInt8], limits: ImageLimits = ImageLimits()) throws(ImagingError) -> GIFLoader {
    try GIFLoader(source: SourceBytes(bytes), limits: limits)
}

/// The ImagingError `body` threw, nil when it returned (any other error is recorded as an issue).
func imagingError(_ body: () throws -> Void) -> ImagingError? {
    do {
        try body()
    } catch let error as ImagingError {
        return error
    } catch {
        Issue.record("unexpected error: \(error)")
    }
    return nil
}
