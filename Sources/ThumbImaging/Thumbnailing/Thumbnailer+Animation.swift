extension ThumbnailRequest {
    /// Whether this output keeps an animated source's animation: its kind says `keep` and its
    /// format is WebP (the only animated output; a client that takes no WebP gets the first
    /// frame as a still in the format it was given).
    package var keepsAnimation: Bool { kind.animation == .keep && encoder.format == .webp }
}

extension Thumbnailer {
    /// The set when some request keeps animation and the source is animated: those requests as
    /// animated WebPs, the rest from the first frame as ever; nil when no request keeps
    /// animation, or the source is not animated (the still path then, which has not read a
    /// byte more for it). The frames are counted and held to the limits before one is decoded.
    func animatedSet(of source: SourceBytes, requests: [ThumbnailRequest], placeholder demand: PlaceholderDemand,
                     isCancelled: CancellationCheck?) throws(ImagingError) -> ThumbnailSet? {
        let animated = requests.indices.filter { requests[$0].keepsAnimation }
        guard !animated.isEmpty, let format = source.format else { return nil }
        try checkBeforeDecoding(source, requests: requests)
        try checkDecodable(format)
        let opened = try format.animationFrames(source, limits: limits, isCancelled: isCancelled)
        guard let frames = opened.frames else {
            return try stillSet(of: source, requests: requests, placeholder: demand, isCancelled: isCancelled,
                                stillReason: opened.stillReason)
        }
        let moving = try animate(frames, requests: animated.map { requests[$0] }, isCancelled: isCancelled)
        let stillIndices = requests.indices.filter { !requests[$0].keepsAnimation }
        let still = try stillSet(of: source, requests: stillIndices.map { requests[$0] }, placeholder: demand, isCancelled: isCancelled)
        var thumbnails: [Thumbnail?] = Array(repeating: nil, count: requests.count)
        for (index, thumbnail) in zip(animated, moving.thumbnails) { thumbnails[index] = thumbnail }
        for (index, thumbnail) in zip(stillIndices, still.thumbnails) { thumbnails[index] = thumbnail }
        var placements = still.placements
        for placement in moving.placements where !placements.contains(where: { $0.shape == placement.shape }) {
            placements.append(placement)
        }
        return ThumbnailSet(thumbnails: thumbnails.compactMap { $0 }, placeholder: still.placeholder, placements: placements, sourceFormat: nil)
    }

    /// Every frame through the one render loop (`renderFrame`, then `present`) for every request,
    /// into one animated WebP each. The crop is placed on the first frame and handed to the
    /// rest (`placedCentre`), so an attention crop holds still while the picture moves.
    func animate(_ frames: any AnimationFrames, requests: [ThumbnailRequest],
                 isCancelled: CancellationCheck?) throws(ImagingError) -> (thumbnails: [Thumbnail], placements: [AttentionPlacement]) {
        var current = requests
        var encoders: [WebPAnimationEncoder] = []
        var firsts: [RenderedImage] = []
        let planned = plan(requests, storedWidth: frames.canvasWidth, storedHeight: frames.canvasHeight, sourceOrientation: .up, allowsDCT: false)
        frames.reduce(toAtMost: planned.outputs.map { max(1, $0.geometry.reduction / tuning.dctMargin) }.min() ?? 1)
        while let frame = try frames.next(isCancelled: isCancelled) {
            if isCancelled?() == true { throw .cancelled }
            let decoded = try renderFrame(PixelFrameLoader(frame.pixels), requests: current, isCancelled: isCancelled)
            for (index, decoded) in decoded.enumerated() {
                let image = present(decoded, for: current[index])
                if firsts.count == index {
                    firsts.append(image)
                    if let placement = image.placement { current[index].placedCentre = placement.centre }
                    encoders.append(try WebPAnimationEncoder(width: image.pixels.width, height: image.pixels.height,
                                                             loopCount: frames.loopCount, settings: current[index].encoder))
                }
                try encoders[index].add(image.pixels, durationMilliseconds: frame.durationMilliseconds)
            }
        }
        guard !firsts.isEmpty else { throw .undecodable(reason: "the animation has no frame that decodes") }
        var thumbnails: [Thumbnail] = []
        for (index, first) in firsts.enumerated() {
            if isCancelled?() == true { throw .cancelled }
            let notes = [first.warning, frames.warning].compactMap { $0 }
            thumbnails.append(Thumbnail(bytes: try encoders[index].finish(), format: .webp, width: first.pixels.width,
                                        height: first.pixels.height, warning: notes.isEmpty ? nil : notes.joined(separator: "; "),
                                        crop: first.crop))
        }
        return (thumbnails, firsts.compactMap(\.placement))
    }
}
