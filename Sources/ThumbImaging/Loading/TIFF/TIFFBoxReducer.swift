/// A page's rows reduced by a whole factor as they are decoded (box average over factor ×
/// factor blocks, the last ones partial: `ceil(side / factor)` of them), so that a page is never
/// held at full size. Colour is averaged premultiplied by alpha, as libvips' shrink does: a
/// transparent pixel's colour does not bleed into its block.
struct TIFFBoxReducer {
    enum Input {
        case rgb
        case rgba(premultiplied: Bool)
    }

    let width: Int
    let height: Int
    let factor: Int
    let hasAlpha: Bool
    let outputWidth: Int
    let outputHeight: Int
    private(set) var output: [UInt8]
    /// Premultiplied sums of the current output row's blocks, four lanes a block.
    private var sums: [UInt32]
    private var rowsInBlock = 0
    private var rowsSeen = 0
    private var outputRow = 0

    /// `width` × `height` pixels in, within the limits (checked by the caller), `factor` ≥ 1.
    init(width: Int, height: Int, factor: Int, hasAlpha: Bool) {
        self.width = width
        self.height = height
        self.factor = max(1, factor)
        self.hasAlpha = hasAlpha
        outputWidth = (width + self.factor - 1) / self.factor
        outputHeight = (height + self.factor - 1) / self.factor
        output = [UInt8](repeating: 0, count: outputWidth * outputHeight * (hasAlpha ? 4 : 3))
        sums = [UInt32](repeating: 0, count: self.factor > 1 ? outputWidth * 4 : 0)
    }

    var pixels: PixelBuffer {
        PixelBuffer(width: outputWidth, height: outputHeight, channels: hasAlpha ? 4 : 3, bytes: output)
    }

    /// Adds the next `count` rows, each `width` pixels of `input`, `rowStride` bytes apart.
    mutating func add(_ rows: UnsafePointer<UInt8>, count: Int, rowStride: Int, input: Input) {
        for index in 0..<count where rowsSeen < height {
            let row = rows + index * rowStride
            if factor == 1 { copy(row, input: input) } else { accumulate(row, input: input) }
            rowsSeen += 1
        }
    }

    private mutating func copy(_ row: UnsafePointer<UInt8>, input: Input) {
        let channels = hasAlpha ? 4 : 3
        let start = outputRow * outputWidth * channels
        let width = self.width
        output.withUnsafeMutableBufferPointer { buffer in
            let out = buffer.baseAddress! + start
            switch input {
            case .rgb:
                for x in 0..<width {
                    out[x * channels] = row[x * 3]
                    out[x * channels + 1] = row[x * 3 + 1]
                    out[x * channels + 2] = row[x * 3 + 2]
                    if channels == 4 { out[x * 4 + 3] = 255 }
                }
            case .rgba(let premultiplied):
                for x in 0..<width {
                    let alpha = UInt32(row[x * 4 + 3])
                    for channel in 0..<3 {
                        let value = UInt32(row[x * 4 + channel])
                        out[x * channels + channel] = premultiplied && channels == 4 ? Self.unpremultiply(value, alpha) : UInt8(value)
                    }
                    if channels == 4 { out[x * 4 + 3] = UInt8(alpha) }
                }
            }
        }
        outputRow += 1
    }

    private mutating func accumulate(_ row: UnsafePointer<UInt8>, input: Input) {
        let factor = self.factor, width = self.width
        sums.withUnsafeMutableBufferPointer { sums in
            for x in 0..<width {
                let block = (x / factor) * 4
                switch input {
                case .rgb:
                    sums[block] &+= UInt32(row[x * 3])
                    sums[block + 1] &+= UInt32(row[x * 3 + 1])
                    sums[block + 2] &+= UInt32(row[x * 3 + 2])
                    sums[block + 3] &+= 255
                case .rgba(let premultiplied):
                    let alpha = UInt32(row[x * 4 + 3])
                    for channel in 0..<3 {
                        let value = UInt32(row[x * 4 + channel])
                        sums[block + channel] &+= premultiplied ? value : (value * alpha + 127) / 255
                    }
                    sums[block + 3] &+= alpha
                }
            }
        }
        rowsInBlock += 1
        if rowsInBlock == factor || rowsSeen + 1 == height { emitBlockRow() }
    }

    private mutating func emitBlockRow() {
        let channels = hasAlpha ? 4 : 3
        let start = outputRow * outputWidth * channels
        let (factor, width, rows, hasAlpha) = (self.factor, self.width, UInt32(rowsInBlock), self.hasAlpha)
        output.withUnsafeMutableBufferPointer { buffer in
            sums.withUnsafeMutableBufferPointer { sums in
                let out = buffer.baseAddress! + start
                for block in 0..<outputWidth {
                    let columns = UInt32(min(factor, width - block * factor))
                    let count = columns * rows
                    let alphaSum = sums[block * 4 + 3]
                    for channel in 0..<3 {
                        let sum = sums[block * 4 + channel]
                        out[block * channels + channel] = hasAlpha
                            ? (alphaSum == 0 ? 0 : UInt8(min(255, (sum * 255 + alphaSum / 2) / alphaSum)))
                            : UInt8((sum + count / 2) / count)
                    }
                    if hasAlpha { out[block * 4 + 3] = UInt8((alphaSum + count / 2) / count) }
                    for lane in 0..<4 { sums[block * 4 + lane] = 0 }
                }
            }
        }
        rowsInBlock = 0
        outputRow += 1
    }

    static func unpremultiply(_ value: UInt32, _ alpha: UInt32) -> UInt8 {
        alpha == 0 ? 0 : UInt8(min(255, (value * 255 + alpha / 2) / alpha))
    }
}
