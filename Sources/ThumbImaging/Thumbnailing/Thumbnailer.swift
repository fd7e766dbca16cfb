/// What to render: a slot kind at one scale, and how to encode it.
package struct ThumbnailRequest: Sendable, Equatable {
    package var kind: SlotKind
    /// Display scale: the output is the kind's points × scale, in pixels.
    package var scale: Int
    package var encoder: EncoderSettings
    /// Turn the image upright per its EXIF orientation (the default).
    package var appliesOrientation: Bool
    /// The asset's focus, if it has one: a `fill` crop of a `.focus` kind keeps it nearest the
    /// slot's centre (a `.centre` or `.attention` kind ignores it).
    package var focus: FocusRegion?
    /// Where attention placed this output's crop on an earlier decode of the same version (a
    /// point: `AttentionPlacement.centre`): the crop goes there without placing it again, so a
    /// JPEG decodes only the crop's columns. Ignored unless attention would place the crop.
    package var placedCentre: FocusRegion?

    package init(kind: SlotKind, scale: Int, encoder: EncoderSettings = EncoderSettings(), appliesOrientation: Bool = true,
                focus: FocusRegion? = nil, placedCentre: FocusRegion? = nil) {
        self.kind = kind
        self.scale = scale
        self.encoder = encoder
        self.appliesOrientation = appliesOrientation
        self.focus = focus
        self.placedCentre = placedCentre
    }
}

/// A rendered thumbnail before encoding.
package struct RenderedImage: Sendable {
    package var pixels: PixelBuffer
    /// Source size as displayed (after orientation), pixels.
    package var sourceWidth: Int
    package var sourceHeight: Int
    /// Decoder warnings (corrupt data that was concealed), one line; nil when clean.
    package var warning: String?
    /// What part of the displayed source the pixels show.
    package var crop: CropRectangle
    /// Where attention placed the crop in this decode, for later renders of this version (nil
    /// when it did not: no attention crop, one handed its place, or one the memory limit centred).
    package var placement: AttentionPlacement?
}

/// An encoded thumbnail.
package struct Thumbnail: Sendable {
    package var bytes: [UInt8]
    package var format: ImageFormat
    /// Output size, pixels.
    package var width: Int
    package var height: Int
    package var warning: String?
    /// What part of the displayed source it shows.
    package var crop: CropRectangle
}

/// The thumbnails of one decode, the source's placeholder when it was asked for, and where
/// attention placed the crops it placed (one per shape).
package struct ThumbnailSet: Sendable {
    package var thumbnails: [Thumbnail]
    package var placeholder: Placeholder?
    package var placements: [AttentionPlacement]
    /// What the source was (its row of `SourceFormat.table`).
    package var sourceFormat: SourceFormat?
}

/// Checked between batches of decoded rows, from inside libjpeg while a progressive file's scans
/// are consumed, and between slices of rows while encoding (so on the working thread, possibly
/// hundreds of times a thumbnail: keep it cheap); return true to stop the work (it throws `.cancelled`).
package typealias CancellationCheck = @Sendable () -> Bool

/// Source to thumbnail: shrink-on-load, block shrink, Lanczos-3, orientation, colour, mask, encode.
/// Stateless and thread-safe: one instance serves every worker.
package struct Thumbnailer: Sendable {
    package var limits: ImageLimits
    /// How much reduction the final Lanczos step keeps (see `ShrinkPlan`).
    package var tuning: ShrinkPlan.Tuning

    /// Whether this thumbnailer may decode the formats whose row says `sandboxOnly` (video):
    /// only the sandboxed worker's says yes (and tests'), so a daemon run with `sandbox: false`
    /// answers them as unsupported rather than run FFmpeg on hostile bytes with the daemon's rights.
    package var decodesSandboxOnlyFormats: Bool

    package init(limits: ImageLimits = ImageLimits(), tuning: ShrinkPlan.Tuning = ShrinkPlan.Tuning(),
                 decodesSandboxOnlyFormats: Bool = false) {
        self.limits = limits
        self.tuning = tuning
        self.decodesSandboxOnlyFormats = decodesSandboxOnlyFormats
    }

    /// Refuses a sandbox-only format (`SourceFormatRow.sandboxOnly`) outside the sandbox.
    func checkDecodable(_ format: SourceFormat) throws(ImagingError) {
        guard format.row.sandboxOnly, !decodesSandboxOnlyFormats else { return }
        throw .unsupportedFormat(reason: "\(format.name) \(format.row.media.rawValue) is decoded only in the sandboxed worker "
                                 + "(the config's sandbox is off; `thumbd render` decodes it with --sandbox)")
    }

    /// Renders and encodes.
    package func thumbnail(of source: SourceBytes, request: ThumbnailRequest,
                          isCancelled: CancellationCheck? = nil) throws(ImagingError) -> Thumbnail {
        try thumbnails(of: source, requests: [request], isCancelled: isCancelled)[0]
    }

    /// Renders and encodes several thumbnails of one source from a single decode (at the DCT
    /// scale the least reduced of them needs): a batch that wants two kinds decodes once.
    package func thumbnails(of source: SourceBytes, requests: [ThumbnailRequest],
                           isCancelled: CancellationCheck? = nil) throws(ImagingError) -> [Thumbnail] {
        try thumbnailSet(of: source, requests: requests, placeholder: .skip, isCancelled: isCancelled).thumbnails
    }

    /// The same, and the source's placeholder from that decode as `placeholder` demands.
    package func thumbnailSet(of source: SourceBytes, requests: [ThumbnailRequest], placeholder demand: PlaceholderDemand,
                             isCancelled: CancellationCheck? = nil) throws(ImagingError) -> ThumbnailSet {
        var set: ThumbnailSet
        if let animated = try animatedSet(of: source, requests: requests, placeholder: demand, isCancelled: isCancelled) {
            set = animated
        } else {
            set = try stillSet(of: source, requests: requests, placeholder: demand, isCancelled: isCancelled)
        }
        set.sourceFormat = source.format
        return set
    }

    /// Every request rendered from the source's first (or only) frame.
    func stillSet(of source: SourceBytes, requests: [ThumbnailRequest], placeholder demand: PlaceholderDemand,
                  isCancelled: CancellationCheck?, stillReason: String? = nil) throws(ImagingError) -> ThumbnailSet {
        let (rendered, placeholder) = try renderAll(source, requests: requests, placeholder: demand, isCancelled: isCancelled)
        var thumbnails: [Thumbnail] = []
        for (request, image) in zip(requests, rendered) {
            if isCancelled?() == true { throw .cancelled }
            var pixels = image.pixels
            if pixels.hasAlpha && !pixels.hasTransparency {
                pixels = pixels.flattened()
            }
            let format = ImageEncoder.format(for: request.encoder, hasAlpha: pixels.hasAlpha)
            let bytes = try ImageEncoder.encode(pixels, as: format, settings: request.encoder, isCancelled: isCancelled)
            let notes = [image.warning, request.keepsAnimation ? stillReason : nil].compactMap { $0 }
            thumbnails.append(Thumbnail(bytes: bytes, format: format, width: pixels.width, height: pixels.height,
                                        warning: notes.isEmpty ? nil : notes.joined(separator: "; "), crop: image.crop))
        }
        var placements: [AttentionPlacement] = []
        for placement in rendered.compactMap(\.placement) where !placements.contains(where: { $0.shape == placement.shape }) {
            placements.append(placement)
        }
        return ThumbnailSet(thumbnails: thumbnails, placeholder: placeholder, placements: placements, sourceFormat: nil)
    }

    /// Renders to pixels (sRGB, straight alpha), without encoding.
    package func render(_ source: SourceBytes, request: ThumbnailRequest,
                       isCancelled: CancellationCheck? = nil) throws(ImagingError) -> RenderedImage {
        try renderAll(source, requests: [request], placeholder: .skip, isCancelled: isCancelled).images[0]
    }

    func renderAll(_ source: SourceBytes, requests: [ThumbnailRequest], placeholder demand: PlaceholderDemand,
                   isCancelled: CancellationCheck?) throws(ImagingError) -> (images: [RenderedImage], placeholder: Placeholder?) {
        guard !requests.isEmpty else { return ([], nil) }
        try checkBeforeDecoding(source, requests: requests)
        let sampler = demand == .skip ? nil : PlaceholderSampler(onlyIfWholeFrame: demand == .ifWholeFrame)
        let rows: any RowSource
        switch source.format {
        case .jpeg:
            rows = try JPEGRowSource(source, limits: limits, isCancelled: isCancelled)
        case .png:
            let codePoints = PNGChunks.codePoints(UnsafeRawBufferPointer(start: source.pointer, count: source.count))
            if let signal = codePoints?.hdrSignal {
                rows = FrameRowSource(try PNGHDRLoader(source: source, signal: signal, limits: limits), isCancelled: isCancelled)
            } else {
                rows = try PNGRowSource(source, limits: limits, codePoints: codePoints, isCancelled: isCancelled)
            }
        case let format?:
            try checkDecodable(format)
            guard let loader = try format.frameLoader(source, limits: limits, isCancelled: isCancelled) else {
                throw .unsupportedFormat(reason: "no loader for \(format.name)")
            }
            rows = FrameRowSource(loader, isCancelled: isCancelled)
        case nil:
            throw .unsupportedFormat(reason: "not \(SourceFormat.listedNames) (\(source.leadingBytesDescription))")
        }
        let decoded = try renderRows(rows, requests: requests, isCancelled: isCancelled, placeholder: sampler)
        let images = zip(requests, decoded).map { request, decoded in present(decoded, for: request) }
        return (images, sampler?.placeholder())
    }

    /// What every render checks before it reads a pixel: each output's size and the file's.
    func checkBeforeDecoding(_ source: SourceBytes, requests: [ThumbnailRequest]) throws(ImagingError) {
        for request in requests {
            try limits.checkOutput(request.kind.checkedPixelSize(scale: request.scale), scale: request.scale)
        }
        // A video is read in bounded parts (`VideoLimits.maxBytesRead`), not whole.
        guard source.count <= limits.maxFileBytes || source.format?.row.staysInFile == .always else {
            throw .tooLarge(reason: "file is \(source.count) bytes, over the \(limits.maxFileBytes)-byte limit")
        }
    }

    /// A decoder's result as shown: colour, orientation, mask, and where attention placed the crop.
    func present(_ decoded: DecodedThumbnail, for request: ThumbnailRequest) -> RenderedImage {
        var decoded = decoded
        if let transform = decoded.colorTransform { transform.apply(to: &decoded.pixels) }
        var pixels = request.appliesOrientation ? decoded.orientation.apply(to: decoded.pixels) : decoded.pixels
        // A source smaller than the slot gives a smaller output: the mask shrinks with it.
        let slot = request.kind.pixelSize(scale: request.scale)
        let filled = max(Double(pixels.width) / Double(slot.width), Double(pixels.height) / Double(slot.height))
        Mask.apply(request.kind.mask, pixelsPerPoint: Double(request.scale) * min(1, filled), to: &pixels)
        let shown = decoded.orientation.displayedSize(width: decoded.storedWidth, height: decoded.storedHeight)
        let placement = decoded.attentionPlaced
            ? request.placementShape.flatMap { shape in
                decoded.crop.centre(inWidth: Double(shown.width), height: Double(shown.height))
                    .map { AttentionPlacement(shape: shape, centre: $0) }
            } : nil
        return RenderedImage(pixels: pixels, sourceWidth: shown.width, sourceHeight: shown.height, warning: decoded.warning,
                             crop: decoded.crop, placement: placement)
    }

    /// One output of a decode: its geometry in the stored frame and how it is reduced.
    struct OutputPlan {
        var geometry: ThumbnailGeometry
        var orientation: Orientation
        var boxFactor: Int
        /// Set when the crop is placed by attention (on the shrunk frame, in `finish`): what the mask keeps.
        var attention: MaskCoverage?
    }

    /// Plans every request against one decode: the DCT denominator is the smallest any of them
    /// chooses (so each still gets its margin); each then picks its own block-shrink factor.
    func plan(_ requests: [ThumbnailRequest], storedWidth: Int, storedHeight: Int, sourceOrientation: Orientation,
              allowsDCT: Bool) -> (denominator: Int, outputs: [OutputPlan]) {
        let planned = requests.map { request -> OutputPlan in
            let orientation = request.appliesOrientation ? sourceOrientation : .up
            return cropPlan(request, storedWidth: storedWidth, storedHeight: storedHeight, orientation: orientation)
        }
        let denominator = planned.map {
            ShrinkPlan(reduction: $0.geometry.reduction, allowsDCT: allowsDCT, tuning: tuning).dctDenominator
        }.min() ?? 1
        let outputs = planned.map { output in
            var output = output
            output.boxFactor = ShrinkPlan(reduction: output.geometry.reduction / Double(denominator), allowsDCT: false,
                                          tuning: tuning).boxFactor
            return output
        }
        return (denominator, outputs)
    }

    /// Last step, shared by every decoder: Lanczos from the shrunk image to the output size.
    func finish(_ shrunk: FloatImage, shrinkFactor: Double, geometry: ThumbnailGeometry) -> PixelBuffer {
        finish(shrunk, shrinkFactorX: shrinkFactor, shrinkFactorY: shrinkFactor, geometry: geometry)
    }

    /// The same, for a shrunk image whose axes were reduced by different factors (a loader's
    /// scaled decode rounds each side on its own).
    func finish(_ shrunk: FloatImage, shrinkFactorX: Double, shrinkFactorY: Double, geometry: ThumbnailGeometry) -> PixelBuffer {
        let region = Lanczos3.Region(geometry, shrinkFactorX: shrinkFactorX, shrinkFactorY: shrinkFactorY)
        return Lanczos3.resample(shrunk, region: region, outputWidth: geometry.outputWidth,
                                 outputHeight: geometry.outputHeight).pixelBuffer()
    }
}

extension Lanczos3.Region {
    /// The crop of `geometry` (stored-frame pixels) in a frame shrunk by the given factors.
    init(_ geometry: ThumbnailGeometry, shrinkFactorX: Double, shrinkFactorY: Double) {
        self.init(x: geometry.cropX / shrinkFactorX, y: geometry.cropY / shrinkFactorY,
                  width: geometry.cropWidth / shrinkFactorX, height: geometry.cropHeight / shrinkFactorY)
    }
}

/// A decoder's result in the stored frame, before colour, orientation and mask.
struct DecodedThumbnail {
    var pixels: PixelBuffer
    var storedWidth: Int
    var storedHeight: Int
    var orientation: Orientation
    var colorTransform: ColorProfileTransform?
    var warning: String?
    /// Bytes of a progressive JPEG's scans that the decode skipped (see `JPEGDecoder.skippedScanBytes`).
    var skippedScanBytes = 0
    /// The crop used, in the displayed source's pixels.
    var crop = CropRectangle(x: 0, y: 0, width: 0, height: 0)
    /// Whether attention placed that crop on this decode's pixels.
    var attentionPlaced = false
}
