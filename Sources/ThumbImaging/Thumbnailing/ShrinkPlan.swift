/// How a source is reduced before the final Lanczos step: libjpeg's DCT scaling (JPEG only),
/// then an integer block shrink. Both are cheap but soft-edged approximations, so each stops
/// while the remaining reduction is still at least its margin, leaving Lanczos a real job.
package struct ShrinkPlan: Sendable, Equatable {
    package struct Tuning: Sendable, Equatable {
        /// Minimum reduction left after DCT scaling (libvips uses 2).
        package var dctMargin: Double = 2
        /// Minimum reduction left after the block shrink.
        package var boxMargin: Double = 2
        package init() {}
    }

    /// libjpeg scale denominator: 1, 2, 4 or 8.
    package var dctDenominator: Int
    /// Block shrink factor after decoding.
    package var boxFactor: Int

    /// `reduction` is source pixels per output pixel along the less reduced axis.
    package init(reduction: Double, allowsDCT: Bool, tuning: Tuning) {
        var denominator = 1
        if allowsDCT {
            for candidate in [8, 4, 2] where reduction / Double(candidate) >= tuning.dctMargin {
                denominator = candidate
                break
            }
        }
        dctDenominator = denominator
        boxFactor = CheckedConversion.clampedInteger(reduction / Double(denominator) / tuning.boxMargin, rounding: .down,
                                                     to: 1...Int(Int32.max))
    }
}
