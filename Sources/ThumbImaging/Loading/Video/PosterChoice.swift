/// What a candidate poster frame looks like, from a grid of its luma samples: enough to tell a
/// black, blank or faded frame (a fade-in, a lens cap, a title card's empty background) from a
/// picture, as ffmpegthumbnailer's histogram check does, for a few thousand reads a frame.
struct LumaStatistics: Equatable {
    /// Mean and standard deviation of luma, 0–255 full range.
    var mean: Double
    var deviation: Double

    /// A frame worth showing: not nearly uniform, not nearly black, not nearly white.
    var isPicture: Bool { deviation >= Self.minDeviation && mean >= Self.minMean && mean <= Self.maxMean }

    /// Among frames that are no picture, the least bad: contrast first, then light.
    var score: Double { deviation + min(mean, 64) / 8 }

    static let minDeviation = 10.0
    static let minMean = 20.0
    static let maxMean = 240.0

    /// Statistics of `samples` (luma codes of `bits` bits, video range when `limitedRange`).
    init<Samples: Sequence>(samples: Samples, bits: Int, limitedRange: Bool) where Samples.Element == Int {
        let shift = max(0, bits - 8)
        var sum = 0.0, squares = 0.0, count = 0.0
        for sample in samples {
            var value = Double(sample >> shift)
            if limitedRange { value = min(255, max(0, (value - 16) * 255 / 219)) }
            sum += value
            squares += value * value
            count += 1
        }
        guard count > 0 else {
            (mean, deviation) = (0, 0)
            return
        }
        mean = sum / count
        deviation = max(0, squares / count - mean * mean).squareRoot()
    }

    init(mean: Double, deviation: Double) {
        self.mean = mean
        self.deviation = deviation
    }
}

/// Where a poster is looked for, and how long the looking may go on: a plain value (tested
/// directly) that the loader follows.
struct PosterSearch: Equatable {
    /// Seconds from the start where the first candidate is sought: 10% of the clip (past an
    /// intro's black or a fade-in), at most `maxSeekSeconds` (a film's 10% is its first act).
    var targetSeconds: Double
    /// Keyframes tried (decoded alone, cheap) before frames in between are.
    var keyframeCandidates: Int
    /// Keyframes are looked for up to this many seconds past the target.
    var keyframeWindowSeconds: Double
    /// Frames decoded in order, when no keyframe is a picture, before the best seen is taken.
    var maxSequentialFrames: Int

    static let maxSeekSeconds = 30.0
    /// Pixels the in-order search may decode in all (`maxSequentialFrames` × frame pixels):
    /// about 240 frames of 1080p, 60 of 4K.
    static let sequentialPixelBudget = 500_000_000

    init(durationSeconds: Double?, framePixels: Int) {
        if let duration = durationSeconds, duration.isFinite, duration > 0 {
            targetSeconds = min(duration * 0.1, Self.maxSeekSeconds)
        } else {
            targetSeconds = 0
        }
        keyframeCandidates = 3
        keyframeWindowSeconds = 10
        maxSequentialFrames = min(240, max(8, Self.sequentialPixelBudget / max(1, framePixels)))
    }
}
