extension HEIFLoader {
    /// The largest difference of aspect ratio (relative) at which an embedded thumbnail still
    /// counts as a scaled copy of the primary image. Some cameras letterbox theirs into a
    /// fixed frame (libheif#1406): such a thumbnail would put black bars into every output.
    static let thumbnailAspectTolerance = 0.01

    /// The image `load` decodes: an embedded thumbnail that is a scaled copy of the primary
    /// image and at least the output's size (`stored / outputShrink`) — the smallest that also
    /// keeps the plan's margin (`stored / maxShrink`) when one does, else the largest — or the
    /// primary image. The final Lanczos step then reduces less than the margin it is planned
    /// with (512 px to a 300-px grid cell: 1.7×), which costs nothing visible (the quality cost
    /// measured in HEIFThumbnailTests) and saves a 200 MP decode. A phone's 200 MP HEIC carries a 512-px thumbnail: every avatar and grid
    /// cell is made from it in a fraction of a second, where the primary image is a grid of
    /// about 800 HEVC tiles (15–30 s and 1.2 GB to decode).
    func chooseImage(maxShrink: Double, outputShrink: Double) -> (HEIFImageHandle, DecodedImage) {
        guard outputShrink > 1 else { return (primary, .primary) }
        func serves(_ thumbnail: HEIFImageHandle, _ shrink: Double) -> Bool {
            Self.thumbnailServes(primaryWidth: storedWidth, primaryHeight: storedHeight, thumbnailWidth: thumbnail.width,
                                 thumbnailHeight: thumbnail.height, maxShrink: shrink)
        }
        let candidates = primary.thumbnails().filter { thumbnail in
            serves(thumbnail, outputShrink)
                && thumbnail.hasAlpha == primary.hasAlpha
                && Self.turnsAlike(primary, thumbnail)
                && (try? limits.check(width: thumbnail.codedWidth, height: thumbnail.codedHeight)) != nil
        }
        let withMargin = candidates.filter { serves($0, maxShrink) }
        let area = { (image: HEIFImageHandle) in image.width * image.height }
        guard let best = withMargin.min(by: { area($0) < area($1) }) ?? candidates.max(by: { area($0) < area($1) }) else {
            return (primary, .primary)
        }
        return (best, .thumbnail(width: best.width, height: best.height))
    }

    /// Whether a thumbnail of the given displayed size can stand in for a primary image of its
    /// displayed size when the plan allows a reduction of `maxShrink`: smaller than the primary
    /// (larger along neither axis), at least `primary / maxShrink` along both axes, and of the same aspect ratio within
    /// `thumbnailAspectTolerance`.
    static func thumbnailServes(primaryWidth: Int, primaryHeight: Int, thumbnailWidth: Int, thumbnailHeight: Int,
                                maxShrink: Double) -> Bool {
        guard primaryWidth > 0, primaryHeight > 0, thumbnailWidth > 0, thumbnailHeight > 0, maxShrink.isFinite else {
            return false
        }
        // Smaller: along one axis at least, and larger along neither (within the aspect
        // tolerance, one axis smaller and the other larger is another picture).
        guard thumbnailWidth <= primaryWidth, thumbnailHeight <= primaryHeight,
              thumbnailWidth < primaryWidth || thumbnailHeight < primaryHeight else { return false }
        let neededWidth = Double(primaryWidth) / maxShrink
        let neededHeight = Double(primaryHeight) / maxShrink
        guard Double(thumbnailWidth) >= neededWidth, Double(thumbnailHeight) >= neededHeight else { return false }
        let primaryAspect = Double(primaryWidth) / Double(primaryHeight)
        let thumbnailAspect = Double(thumbnailWidth) / Double(thumbnailHeight)
        return abs(thumbnailAspect - primaryAspect) <= thumbnailAspectTolerance * primaryAspect
    }

    /// The thumbnail's own transforms agree with the primary's as far as sizes can tell: both or
    /// neither turned a quarter from their coded size. The aspect check sees a disagreement on
    /// an oblong image; this one sees it on a square-ish one (within the tolerance of square),
    /// where a thumbnail coded upright and a primary turned by `irot` would give the same sizes.
    /// libheif 1.15 says nothing of mirrors or half turns, so those are taken on trust.
    static func turnsAlike(_ primary: HEIFImageHandle, _ thumbnail: HEIFImageHandle) -> Bool {
        let primaryAspect = Double(primary.width) / Double(max(1, primary.height))
        let isSquareish = abs(primaryAspect - 1) <= thumbnailAspectTolerance
        guard isSquareish else { return true }
        let primaryTurned = primary.codedWidth == primary.height && primary.codedHeight == primary.width
            && primary.codedWidth != primary.codedHeight
        let thumbnailTurned = thumbnail.codedWidth == thumbnail.height && thumbnail.codedHeight == thumbnail.width
            && thumbnail.codedWidth != thumbnail.codedHeight
        return primaryTurned == thumbnailTurned
    }
}
