/// The integer block reduction frame loaders do while converting to 8 bits (HEIF's planes,
/// JPEG XL's interleaved samples): each output pixel sums a `factor` × `factor` block, colour
/// weighted by alpha (as the thumbnailer's block shrink does), partial at the right and bottom.
enum BlockSums {
    /// Writes one output row of `sums.count` pixels from its blocks' sums (Σ colour × alpha, or Σ
    /// colour without alpha, and Σ alpha), `rows` source rows tall, to `out` from `start`.
    /// `byte(numerator, denominator)` turns a colour mean in sample units into a byte.
    static func storeRow(_ sums: UnsafeMutableBufferPointer<SIMD4<UInt64>>, rows: Int, width: Int, factor: Int,
                         hasAlpha: Bool, alphaMaximum: UInt64, into out: UnsafeMutableBufferPointer<UInt8>, at start: Int,
                         byte: (UInt64, UInt64) -> UInt8) {
        let channels = hasAlpha ? 4 : 3
        var at = start
        for block in 0..<sums.count {
            let count = UInt64(rows) * UInt64(min(block * factor + factor, width) - block * factor)
            let sum = sums[block]
            if hasAlpha {
                let alphaSum = sum[3]
                for channel in 0..<3 {
                    // Σ colour × alpha / Σ alpha, in alpha units: the straight colour.
                    out[at + channel] = alphaSum == 0 ? 0 : byte(sum[channel], alphaSum)
                }
                out[at + 3] = UInt8(min(255, (alphaSum &* 255 &+ count &* alphaMaximum / 2) / (count &* alphaMaximum)))
            } else {
                for channel in 0..<3 {
                    out[at + channel] = byte(sum[channel], count)
                }
            }
            at += channels
        }
    }
}
