import CWebP

extension WebPLoader {
    /// What libwebpdemux finds in the RIFF container: the `ICCP` and `EXIF` chunks and, for an
    /// animation, where the first frame's bitstream lies and where it sits on the canvas. Parsed
    /// in partial mode, so that a truncated file still gives what precedes the cut.
    struct Container {
        var iccProfile: [UInt8]?
        var orientation: Orientation?
        var firstFrame: (bytes: Range<Int>, rect: FrameRect)?
        var warning: String?

        init(file: UnsafeRawBufferPointer, isAnimation: Bool, canvasWidth: Int, canvasHeight: Int) throws(ImagingError) {
            guard let base = file.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
                throw .undecodable(reason: "the WebP file is empty")
            }
            var data = WebPData(bytes: base, size: file.count)
            var state = WEBP_DEMUX_PARSING_HEADER
            guard let demuxer = WebPDemuxPartial(&data, &state), state != WEBP_DEMUX_PARSE_ERROR else {
                // libwebp's still decoder is the judge of a still: metadata is lost, not the image.
                if isAnimation { throw .undecodable(reason: "animated WebP: libwebpdemux cannot parse the RIFF chunks") }
                warning = "libwebpdemux cannot parse the RIFF chunks: any ICC profile and EXIF orientation were ignored"
                return
            }
            defer { WebPDemuxDelete(demuxer) }
            if let icc = Self.chunk("ICCP", in: demuxer) {
                iccProfile = Array(icc)
            }
            if let exif = Self.chunk("EXIF", in: demuxer) {
                // The specification says the chunk is the TIFF structure; some writers (Pillow,
                // exiftool before 2023) kept JPEG's "Exif\0\0" in front of it.
                let prefix: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]
                let tiff = exif.starts(with: prefix) ? UnsafeRawBufferPointer(rebasing: exif.dropFirst(prefix.count)) : exif
                orientation = EXIFReader.orientation(tiff: tiff)
            }
            guard isAnimation else { return }
            firstFrame = try Self.firstFrame(of: demuxer, file: file, canvasWidth: canvasWidth, canvasHeight: canvasHeight)
        }

        /// The first chunk of `fourCC`, as bytes of the file (the demuxer points into it).
        static func chunk(_ fourCC: String, in demuxer: OpaquePointer) -> UnsafeRawBufferPointer? {
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demuxer, fourCC, 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let bytes = iterator.chunk.bytes, iterator.chunk.size > 0 else { return nil }
            return UnsafeRawBufferPointer(start: bytes, count: iterator.chunk.size)
        }

        /// Frame 1 of an animation. It is a key frame by definition (nothing precedes it), so a
        /// browser shows it on a transparent canvas whatever its blend and dispose methods (and
        /// ignores the ANIM background colour, as libwebp's WebPAnimDecoder and Pillow do).
        static func firstFrame(of demuxer: OpaquePointer, file: UnsafeRawBufferPointer, canvasWidth: Int,
                               canvasHeight: Int) throws(ImagingError) -> (bytes: Range<Int>, rect: FrameRect) {
            var iterator = WebPIterator()
            guard WebPDemuxGetFrame(demuxer, 1, &iterator) != 0 else {
                throw .undecodable(reason: "animated WebP without a first frame (the file ends before its first ANMF chunk)")
            }
            defer { WebPDemuxReleaseIterator(&iterator) }
            let rect = FrameRect(x: Int(iterator.x_offset), y: Int(iterator.y_offset),
                                 width: Int(iterator.width), height: Int(iterator.height))
            // libwebpdemux checks this too; the decode writes into the canvas by it, so again here.
            guard rect.x >= 0, rect.y >= 0, rect.width > 0, rect.height > 0,
                  rect.width <= canvasWidth - rect.x, rect.height <= canvasHeight - rect.y else {
                throw .undecodable(reason: "the first frame (\(rect.width)x\(rect.height) at \(rect.x),\(rect.y)) "
                                   + "does not fit the \(canvasWidth)x\(canvasHeight) canvas")
            }
            guard let start = iterator.fragment.bytes, let fileStart = file.baseAddress?.assumingMemoryBound(to: UInt8.self)
            else { throw .undecodable(reason: "the animation's first frame has no bitstream") }
            let offset = fileStart.distance(to: start)
            guard offset >= 0, iterator.fragment.size > 0, iterator.fragment.size <= file.count - offset else {
                throw .undecodable(reason: "the animation's first frame lies outside the file")
            }
            return (offset..<(offset + iterator.fragment.size), rect)
        }
    }
}
