/// A video's display matrix (ISO/IEC 14496-12 `tkhd`, Matroska's projection, as FFmpeg reads
/// them into `AV_PKT_DATA_DISPLAYMATRIX`) as the EXIF orientation the render loop applies. A
/// phone stores a portrait clip landscape with a 90° matrix; a mirrored matrix (negative
/// determinant) is a flip as well, which FFmpeg 5.1's own autorotate leaves out (a mirror image).
enum VideoOrientation {
    /// `matrix`: the nine 16.16 / 2.30 entries, row-major; `rotationDegrees`: FFmpeg's
    /// `av_display_rotation_get` of it (counter-clockwise, NaN for a degenerate matrix). Angles
    /// that are no multiple of 90° are not turned (thumbnails are upright or not at all).
    static func orientation(matrix: [Int32], rotationDegrees: Double) -> Orientation {
        guard matrix.count == 9, rotationDegrees.isFinite else { return .up }
        // Clockwise degrees to turn the stored frame, 0..<360.
        var theta = -rotationDegrees.rounded()
        theta -= 360 * (theta / 360 + 0.9 / 360).rounded(.down)
        let (a, b, c, d) = (Int64(matrix[0]), Int64(matrix[1]), Int64(matrix[3]), Int64(matrix[4]))
        let mirrored = a * d - b * c < 0
        func near(_ angle: Double) -> Bool { abs(theta - angle) < 1 }
        if near(90) {
            // Clockwise, or (mirrored) the transpose: FFmpeg's transpose=clock / cclock_flip.
            return mirrored ? .leftMirrored : .right
        }
        if near(270) {
            // Counter-clockwise, or (mirrored) the anti-transpose: transpose=cclock / clock_flip.
            return mirrored ? .rightMirrored : .left
        }
        if near(180) {
            // A half turn is both flips; one flip alone reads as 180° with a mirror.
            switch (a < 0, d < 0) {
            case (true, true): return .down
            case (true, false): return .upMirrored
            case (false, true): return .downMirrored
            case (false, false): return .down
            }
        }
        if near(0) || near(360) {
            return d < 0 ? .downMirrored : (a < 0 ? .upMirrored : .up)
        }
        return .up
    }
}
