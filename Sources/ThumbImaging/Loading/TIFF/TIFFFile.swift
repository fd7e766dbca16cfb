import CThumbShim
import CTIFF
import ThumbSystem

/// An open TIFF, in memory or read where needed from its file (libtiff through the shim): its
/// current directory's tags, the directories of the file, and libtiff's first error and
/// warning. Keeps the source alive.
final class TIFFFile {
    private let handle: OpaquePointer
    let source: SourceBytes

    init(_ source: SourceBytes, limits: ImageLimits) throws(ImagingError) {
        var message = [CChar](repeating: 0, count: Int(CTHUMB_MESSAGE_CAPACITY))
        // Each of libtiff's own allocations (tag arrays, strip offsets, a codec's state) is
        // bounded by the decoder memory limit: a directory claiming 2^30 strip offsets fails
        // in libtiff, not in the kernel.
        let opened = message.withUnsafeMutableBufferPointer { text in
            if let file = source.file {
                CThumb_TIFFOpen(nil, file.descriptor, UInt64(source.count), Int64(limits.maxDecoderMemoryBytes), text.baseAddress)
            } else {
                CThumb_TIFFOpen(source.pointer, -1, UInt64(source.count), Int64(limits.maxDecoderMemoryBytes), text.baseAddress)
            }
        }
        guard let opened else {
            // A directory that would not read may be one rewritten since the open: say so.
            try Self.confirmUnchanged(source)
            throw .undecodable(reason: "TIFF: libtiff says \(Self.text(message))")
        }
        handle = opened
        self.source = source
    }

    deinit { CThumb_TIFFClose(handle) }

    static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func text(_ pointer: UnsafePointer<CChar>) -> String? {
        let value = String(cString: pointer)
        return value.isEmpty ? nil : value
    }

    /// libtiff's first error since the open, or nil.
    var error: String? { Self.text(CThumb_TIFFError(handle)) }

    /// libtiff's first warning, with how many more there were, one line; nil when none.
    var warning: String? {
        guard let first = Self.text(CThumb_TIFFWarning(handle)) else { return nil }
        let more = Int(CThumb_TIFFWarningCount(handle)) - 1
        return "libtiff: " + first + (more > 0 ? " (and \(more) more warnings)" : "")
    }

    func clearMessages() { CThumb_TIFFClearMessages(handle) }

    /// Throws unless a source read from its file is still the version that was opened: a strip
    /// read after a rewrite would mix two versions in one thumbnail.
    func confirmSourceUnchanged() throws(ImagingError) { try Self.confirmUnchanged(source) }

    private static func confirmUnchanged(_ source: SourceBytes) throws(ImagingError) {
        do throws(FileReadError) {
            try source.file?.confirmUnchanged()
        } catch {
            switch error {
            case .changed(let reason), .unreadable(let reason), .tooLarge(let reason):
                throw .undecodable(reason: "TIFF: \(reason)")
            }
        }
    }

    /// libtiff's reason for a failure of `what`.
    func failure(_ what: String) -> ImagingError {
        .undecodable(reason: "TIFF: \(what): libtiff says \(error ?? "no reason given")")
    }

    func info() throws(ImagingError) -> TIFFDirectory {
        var info = CThumb_TIFFInfo()
        guard CThumb_TIFFReadInfo(handle, &info) == 0 else { throw failure("reading the directory's tags") }
        return TIFFDirectory(info)
    }

    /// Makes directory `index` of the main chain current.
    func select(directory index: Int) throws(ImagingError) {
        guard let index = UInt32(exactly: index), CThumb_TIFFSetDirectory(handle, index) == 0 else {
            throw failure("reading directory \(index)")
        }
    }

    func select(subDirectoryAt offset: UInt64) throws(ImagingError) {
        guard CThumb_TIFFSetSubDirectory(handle, offset) == 0 else { throw failure("reading the SubIFD at offset \(offset)") }
    }

    /// The current directory's SubIFD offsets, at most `capacity`.
    func subDirectoryOffsets(capacity: Int) -> [UInt64] {
        var offsets = [UInt64](repeating: 0, count: max(0, capacity))
        let count = offsets.withUnsafeMutableBufferPointer { CThumb_TIFFSubIFDOffsets(handle, $0.baseAddress, UInt32(clamping: $0.count)) }
        return Array(offsets.prefix(Int(count)))
    }

    /// The current directory's ICC profile, or nil.
    func iccProfile() -> [UInt8]? {
        var bytes: UnsafePointer<UInt8>?
        let length = CThumb_TIFFICCProfile(handle, &bytes)
        guard let bytes, length > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }

    /// Starts libtiff's RGBA reader on the current directory; returns its alpha kind.
    func beginRGBA() throws(ImagingError) -> Int32 {
        var alpha: Int32 = 0
        guard CThumb_TIFFRGBABegin(handle, &alpha) == 0 else {
            throw .unsupportedFormat(reason: "TIFF: libtiff's RGBA reader says \(error ?? "it cannot read this image")")
        }
        return alpha
    }

    /// Rows as packed ABGR words (libtiff's RGBA form), `rowCount` × width of them.
    func rgbaRows(_ rows: Range<Int>, into raster: UnsafeMutablePointer<UInt32>) throws(ImagingError) {
        guard let first = UInt32(exactly: rows.lowerBound), let count = UInt32(exactly: rows.count),
              CThumb_TIFFRGBARows(handle, first, count, raster) == 0 else {
            throw failure("decoding rows \(rows.lowerBound)..<\(rows.upperBound)")
        }
    }

    /// Rows of decoded samples of a contiguous image, `scanlineBytes` each, `rowStride` apart.
    func sampleRows(_ rows: Range<Int>, into buffer: UnsafeMutablePointer<UInt8>, rowStride: Int) throws(ImagingError) {
        guard let first = UInt32(exactly: rows.lowerBound), let count = UInt32(exactly: rows.count),
              CThumb_TIFFReadRows(handle, first, count, buffer, rowStride) == 0 else {
            throw failure("decoding rows \(rows.lowerBound)..<\(rows.upperBound)")
        }
    }
}

/// The tags of one directory (image) that decide how it is decoded and what that costs.
struct TIFFDirectory: Equatable {
    var width, height: Int
    var samplesPerPixel, bitsPerSample, sampleFormat, photometric: Int
    var compression, planarConfig, orientationTag, inkSet: Int
    var extraSampleCount, firstExtraSample: Int
    var isReducedResolution: Bool
    var isTiled: Bool
    var tileWidth, tileLength, rowsPerStrip: Int
    /// One decoded tile or strip, bytes (Int.max when libtiff's 64-bit figure does not fit).
    var chunkBytes: Int
    var chunkCount: Int
    var scanlineBytes: Int
    var subDirectoryCount: Int

    init(_ info: CThumb_TIFFInfo) {
        width = Int(info.width)
        height = Int(info.height)
        samplesPerPixel = Int(info.samplesPerPixel)
        bitsPerSample = Int(info.bitsPerSample)
        sampleFormat = Int(info.sampleFormat)
        photometric = Int(info.photometric)
        compression = Int(info.compression)
        planarConfig = Int(info.planarConfig)
        orientationTag = Int(info.orientation)
        inkSet = Int(info.inkSet)
        extraSampleCount = Int(info.extraSampleCount)
        firstExtraSample = Int(info.firstExtraSample)
        isReducedResolution = info.subfileType & UInt32(FILETYPE_REDUCEDIMAGE) != 0
        isTiled = info.isTiled != 0
        tileWidth = Int(info.tileWidth)
        tileLength = Int(info.tileLength)
        rowsPerStrip = Int(info.rowsPerStrip)
        chunkBytes = Int(exactly: info.chunkBytes) ?? Int.max
        chunkCount = Int(exactly: info.chunkCount) ?? Int.max
        scanlineBytes = Int(exactly: info.scanlineBytes) ?? Int.max
        subDirectoryCount = Int(info.subIFDCount)
    }

    var isPlanar: Bool { planarConfig == Int(PLANARCONFIG_SEPARATE) }

    /// Rows decoded together: a strip or a row of tiles (libtiff decodes each whole).
    var rowsPerChunk: Int {
        let rows = isTiled ? tileLength : rowsPerStrip
        return rows > 0 ? min(rows, height) : height
    }

    /// TIFF's Orientation values are EXIF's (EXIF took them from TIFF); anything else is upright.
    var orientation: Orientation { Orientation(rawValue: orientationTag) ?? .up }

    /// A reduced copy of `self` is of the same kind of pixels.
    func hasSamplesLike(_ other: TIFFDirectory) -> Bool {
        samplesPerPixel == other.samplesPerPixel && bitsPerSample == other.bitsPerSample && sampleFormat == other.sampleFormat
            && photometric == other.photometric && orientationTag == other.orientationTag
    }
}
