/// LZW data of a GIF frame whose minimum code size is 9, 10 or 11: giflib refuses any over 8
/// ("Failed to read"), while Chromium (Skia's GIF reader takes code sizes below 12), Firefox,
/// Pillow and libvips decode them. The GIF89a spec allows only 2–8, but such files exist
/// (written by encoders that size the code from a 9+ bit palette index count) and the browsers
/// show them, so thumbd shows them as Chromium does: a root code names colour index
/// `code & 0xFF` (Skia keeps LZW suffixes as bytes), and a code past the table ends the frame
/// as damaged data does elsewhere (the rows before it kept, the rest transparent).
///
/// Hand-written rather than a library's: giflib is the library, and it stops at 8 by design;
/// the decoder below is the textbook one (a 4096-entry table, codes up to 12 bits), reading the
/// frame's sub-blocks straight from `GIFInput` where giflib left off (after the code size byte).
final class GIFWideCodeDecoder {
    static let maxCodes = 4096
    static let supportedCodeSizes = 9...11

    private let input: GIFInput
    private let clearCode: Int
    private var codeWidth: Int
    private var nextCode: Int
    private var previousCode: Int?
    private var firstByteOfPrevious: UInt8 = 0
    /// Each table code's string: its prefix code and its last byte.
    private var prefix = [UInt16](repeating: 0, count: maxCodes)
    private var suffix = [UInt8](repeating: 0, count: maxCodes)
    /// The decoded string of the last code, not yet handed out, from `pendingStart`.
    private var pending = [UInt8](repeating: 0, count: maxCodes)
    private var pendingStart = maxCodes
    private var bitBuffer = 0
    private var bitCount = 0
    private var block: [UInt8] = []
    private var blockIndex = 0
    private var ended = false
    /// Why decoding stopped early, for the truncation warning.
    private(set) var failure: String?

    init(minimumCodeSize: Int, input: GIFInput) {
        self.input = input
        clearCode = 1 << minimumCodeSize
        codeWidth = minimumCodeSize + 1
        nextCode = clearCode + 2
        for code in 0..<clearCode {
            suffix[code] = UInt8(truncatingIfNeeded: code)
        }
    }

    /// Fills `count` colour indices; false when the data ends or breaks first.
    func readRow(into indices: UnsafeMutablePointer<UInt8>, count: Int) -> Bool {
        var filled = 0
        while filled < count {
            if pendingStart == Self.maxCodes {
                guard decodeNextCode() else { return false }
                continue
            }
            let taken = min(count - filled, Self.maxCodes - pendingStart)
            pending.withUnsafeBufferPointer { pending in
                (indices + filled).update(from: pending.baseAddress! + pendingStart, count: taken)
            }
            pendingStart += taken
            filled += taken
        }
        return true
    }

    /// Decodes one code into `pending` (a clear code only resets the table). False at the end.
    private func decodeNextCode() -> Bool {
        while true {
            guard !ended, let code = nextBits() else {
                if failure == nil { failure = ended ? "the end code came before the last row" : "the data ends before the last row" }
                return false
            }
            if code == clearCode {
                codeWidth = clearCode.trailingZeroBitCount + 1
                nextCode = clearCode + 2
                previousCode = nil
                continue
            }
            if code == clearCode + 1 {
                ended = true
                continue
            }
            var emitted = code
            var extra: UInt8?
            if code >= nextCode {
                // The one code not yet in the table: the previous string and its own first byte.
                guard code == nextCode, let previous = previousCode else {
                    failure = "code \(code) is past the table's \(nextCode) entries"
                    return false
                }
                emitted = previous
                extra = firstByteOfPrevious
            }
            var at = Self.maxCodes
            if let extra { at -= 1; pending[at] = extra }
            var walk = emitted
            while walk >= clearCode {
                at -= 1
                pending[at] = suffix[walk]
                walk = Int(prefix[walk])
            }
            at -= 1
            pending[at] = suffix[walk]
            pendingStart = at
            let first = pending[at]
            if let previous = previousCode, nextCode < Self.maxCodes {
                prefix[nextCode] = UInt16(previous)
                suffix[nextCode] = first
                nextCode += 1
                if nextCode == 1 << codeWidth && codeWidth < 12 { codeWidth += 1 }
            }
            previousCode = code
            firstByteOfPrevious = first
            return true
        }
    }

    /// The next `codeWidth` bits, least significant first, across sub-blocks; nil at the end.
    private func nextBits() -> Int? {
        while bitCount < codeWidth {
            if blockIndex == block.count {
                guard let next = input.nextSubBlock({ Array($0) }) else { return nil }
                block = next
                blockIndex = 0
            }
            bitBuffer |= Int(block[blockIndex]) << bitCount
            blockIndex += 1
            bitCount += 8
        }
        let code = bitBuffer & (1 << codeWidth - 1)
        bitBuffer >>= codeWidth
        bitCount -= codeWidth
        return code
    }
}
