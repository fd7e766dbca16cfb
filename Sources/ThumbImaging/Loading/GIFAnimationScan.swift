/// The frames of a GIF, read from its block structure alone: no LZW data is decoded, so an
/// animation is counted (and refused by `ImageLimits.checkAnimation`) before any pixel is
/// made. One pass over the bytes, each sub-block skipped by its length byte: bounded by the
/// file's size, and nothing it reads can make it allocate more than one record per frame.
struct GIFAnimationScan: Equatable {
    /// One image descriptor and the Graphic Control Extension before it.
    struct Frame: Equatable {
        var left: Int
        var top: Int
        var width: Int
        var height: Int
        /// The GCE's delay, in hundredths of a second (0 when it has none).
        var delayCentiseconds: Int
        /// The GCE's disposal method: 0, 1 keep, 2 clear to transparent, 3 restore the previous canvas.
        var disposal: Int
        var transparentIndex: Int?
        /// The LZW minimum code size byte (giflib decodes 2–8).
        var codeSize: Int
    }

    /// The logical screen, pixels.
    var screenWidth: Int
    var screenHeight: Int
    /// The first `maxStoredFrames` frames' records (all of them when the animation is within the limit).
    var frames: [Frame]
    /// Every frame the structure holds: counted, not stored, past `maxStoredFrames`, so that a
    /// file of a million empty frames costs a counter, not a million records, before the limit.
    var frameCount = 0
    /// The NETSCAPE2.0 (or ANIMEXTS1.0) loop count, 0 = forever; nil when the file has none
    /// (browsers then play the animation once).
    var loopCount: Int?
    /// Where the structure stopped making sense before its trailer (a truncated file, an
    /// unknown block): the frames before it are kept, as browsers show them.
    var stoppedEarly: String?

    /// Scans `bytes`, keeping at most `maxStoredFrames` frame records; throws only when there
    /// is no GIF header or logical screen.
    init(_ bytes: UnsafeRawBufferPointer, maxStoredFrames: Int = .max) throws(ImagingError) {
        var reader = Reader(bytes: bytes)
        guard let signature = reader.take(6), signature.elementsEqual("GIF87a".utf8) || signature.elementsEqual("GIF89a".utf8),
              let width = reader.word(), let height = reader.word(), let flags = reader.byte(), reader.skip(2)
        else { throw .undecodable(reason: "GIF: no header and logical screen in the first 13 bytes") }
        (screenWidth, screenHeight, frames) = (width, height, [])
        if flags & 0x80 != 0, !reader.skip(3 << (Int(flags & 0x07) + 1)) {
            stoppedEarly = "the global colour table ends past the data"
            return
        }
        var control = (delay: 0, disposal: 0, transparent: Int?.none)
        while stoppedEarly == nil {
            guard let introducer = reader.byte() else { stoppedEarly = "the data ends before the trailer"; break }
            switch introducer {
            case 0x3B:
                return
            case 0x21:
                guard let label = reader.byte() else { stoppedEarly = "an extension ends at its label"; break }
                let first = reader.subBlock()
                if label == 0xF9, let first, first.count >= 4 {
                    let packed = first[first.startIndex]
                    control = (Int(first[first.startIndex + 1]) | Int(first[first.startIndex + 2]) << 8,
                               Int(packed >> 2) & 0x07, packed & 0x01 != 0 ? Int(first[first.startIndex + 3]) : nil)
                } else if label == 0xFF, let first, first.elementsEqual("NETSCAPE2.0".utf8) || first.elementsEqual("ANIMEXTS1.0".utf8),
                          let data = reader.subBlock(), data.count >= 3, data[data.startIndex] == 1 {
                    loopCount = Int(data[data.startIndex + 1]) | Int(data[data.startIndex + 2]) << 8
                }
                if first != nil, !reader.skipSubBlocks() { stoppedEarly = "an extension's data ends past the data" }
            case 0x2C:
                guard let left = reader.word(), let top = reader.word(), let width = reader.word(), let height = reader.word(),
                      let flags = reader.byte(), flags & 0x80 == 0 || reader.skip(3 << (Int(flags & 0x07) + 1)),
                      let codeSize = reader.byte()
                else { stoppedEarly = "frame \(frameCount + 1)'s descriptor ends past the data"; break }
                frameCount += 1
                if frames.count < maxStoredFrames { frames.append(Frame(left: left, top: top, width: width, height: height, delayCentiseconds: control.delay,
                                    disposal: control.disposal, transparentIndex: control.transparent, codeSize: Int(codeSize))) }
                control = (0, 0, nil) // a GCE applies to the one image after it
                if !reader.skipSubBlocks() { stoppedEarly = "frame \(frameCount)'s data ends past the data" }
            default:
                stoppedEarly = "byte \(reader.offset - 1) is no block (0x\(String(introducer, radix: 16)))"
            }
        }
    }

    /// A cursor over the bytes; every read checks what is left.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func take(_ count: Int) -> Slice<UnsafeRawBufferPointer>? {
            guard count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }

        mutating func skip(_ count: Int) -> Bool { take(count) != nil }
        mutating func byte() -> UInt8? { take(1)?.first }

        mutating func word() -> Int? {
            guard let pair = take(2) else { return nil }
            return Int(pair[pair.startIndex]) | Int(pair[pair.startIndex + 1]) << 8
        }

        /// The next sub-block's bytes; nil at the terminator (consumed) or the end of the data.
        mutating func subBlock() -> Slice<UnsafeRawBufferPointer>? {
            guard let length = byte(), length > 0 else { return nil }
            return take(Int(length))
        }

        /// Skips sub-blocks through the terminator; false when the data ends first.
        mutating func skipSubBlocks() -> Bool {
            while true {
                guard let length = byte() else { return false }
                if length == 0 { return true }
                guard skip(Int(length)) else { return false }
            }
        }
    }
}
