extension Thumbnailer {
    /// Where a request's crop goes before anything is decoded: centred, or on the asset's focus
    /// (placed in the displayed frame, then mapped to the stored one), or where attention placed
    /// it on an earlier decode (`placedCentre`); an attention crop is otherwise only marked here
    /// and placed by `finish(_:output:)` on the shrunk frame.
    func cropPlan(_ request: ThumbnailRequest, storedWidth: Int, storedHeight: Int, orientation: Orientation) -> OutputPlan {
        let kind = request.kind
        let shown = orientation.displayedSize(width: storedWidth, height: storedHeight)
        let slot = kind.pixelSize(scale: request.scale)
        var displayed = ThumbnailGeometry(sourceWidth: shown.width, sourceHeight: shown.height, slotWidth: slot.width,
                                          slotHeight: slot.height, mode: kind.mode, upscale: kind.upscale)
        var attention: MaskCoverage?
        if kind.mode == .fill, displayed.hasFreedom {
            switch (kind.crop, request.focus) {
            case (.centre, _):
                break
            case let (.focus, focus?):
                displayed = displayed.placed(on: focus)
            case (.attention, _), (.focus, nil):
                if let placed = request.placedCentre {
                    displayed = displayed.placed(on: placed)
                    break
                }
                // The same pixels per point as `Mask.apply` gets for this output in `renderAll`.
                let filled = max(Double(displayed.outputWidth) / Double(slot.width),
                                 Double(displayed.outputHeight) / Double(slot.height))
                let swaps = orientation.swapsDimensions
                attention = MaskCoverage(mask: kind.mask,
                                         widthPixels: Double(swaps ? displayed.outputHeight : displayed.outputWidth),
                                         heightPixels: Double(swaps ? displayed.outputWidth : displayed.outputHeight),
                                         pixelsPerPoint: Double(request.scale) * min(1, filled))
            }
        }
        return OutputPlan(geometry: displayed.stored(for: orientation), orientation: orientation, boxFactor: 1,
                          attention: attention)
    }

    /// Last step, shared by every decoder: an attention crop placed on the shrunk frame, then
    /// Lanczos from that frame's crop to the output size. Returns the pixels and the crop used,
    /// in the displayed source's pixels.
    func finish(_ shrunk: FloatImage, shrinkFactorX: Double, shrinkFactorY: Double,
                output: OutputPlan) -> (pixels: PixelBuffer, crop: CropRectangle) {
        var geometry = output.geometry
        if let coverage = output.attention {
            geometry = Attention.place(geometry, on: shrunk, shrinkFactorX: shrinkFactorX, shrinkFactorY: shrinkFactorY,
                                       coverage: coverage)
        }
        let pixels = finish(shrunk, shrinkFactorX: shrinkFactorX, shrinkFactorY: shrinkFactorY, geometry: geometry)
        return (pixels, geometry.displayedCrop(for: output.orientation))
    }

    /// The same for a JPEG frame held as bytes (`RowSink.frame`), decoded at 1/`shrink`:
    /// the crop is placed, then only its columns go through the row-streamed Lanczos step.
    func finish(_ frame: FrameRows, shrink: Double, output: OutputPlan) -> (pixels: PixelBuffer, crop: CropRectangle) {
        var geometry = output.geometry
        if let coverage = output.attention {
            geometry = Attention.place(geometry, on: frame, shrinkFactorX: shrink, shrinkFactorY: shrink, coverage: coverage)
        }
        let resampler = RowResampler(sourceWidth: frame.width, sourceHeight: frame.height,
                                     region: Lanczos3.Region(geometry, shrinkFactorX: shrink, shrinkFactorY: shrink),
                                     outputWidth: geometry.outputWidth, outputHeight: geometry.outputHeight)
        return (frame.resample(resampler).pixelBuffer(), geometry.displayedCrop(for: output.orientation))
    }
}

extension Thumbnailer {
    /// Columns kept clear of libjpeg's cut on each side: it crops whole iMCU columns, and an
    /// upsampled component's edge sample is replicated at the cut, unlike inside the frame.
    static let cropMarginPixels = 16

    /// When every output reads its rows straight into Lanczos and their taps leave a good part of
    /// the width unread (a fill crop of a wider frame: a square avatar of a 4:3 photo skips a
    /// quarter), the columns worth decoding; nil when the whole width is.
    static func columnsToDecode(width: Int, sinks: [RowSink]) -> Range<Int>? {
        var resamplers: [RowResampler] = []
        for sink in sinks {
            guard case let .resample(resampler) = sink else { return nil }
            resamplers.append(resampler)
        }
        guard let low = resamplers.map(\.columnsRead.lowerBound).min(),
              let high = resamplers.map(\.columnsRead.upperBound).max(), low < high else { return nil }
        let wanted = max(0, low - cropMarginPixels)..<min(width, high + cropMarginPixels)
        return wanted.count * 8 <= width * 7 ? wanted : nil // less than an eighth to skip
    }

    /// Tells the source to skip the columns outside `wanted` (for JPEG: their IDCT, upsampling
    /// and colour conversion; `sinks` are all resamplers: `columnsToDecode`). Returns the columns
    /// each row will hold (all of them when the source cannot crop).
    static func cropColumns(_ source: any RowSource, _ wanted: Range<Int>, width: Int,
                            sinks: [RowSink]) throws(ImagingError) -> Range<Int> {
        guard let columns = try source.cropColumns(wanted) else { return 0..<width }
        guard columns.lowerBound <= wanted.lowerBound, columns.upperBound >= wanted.upperBound,
              columns.upperBound <= width else {
            throw .undecodable(reason: "libjpeg cropped \(columns) for columns \(wanted) of \(width)")
        }
        for case let .resample(resampler) in sinks { resampler.receive(columns: columns) }
        return columns
    }
}

/// Where one output's decoded rows go: the block shrink (Lanczos then runs on its result) or,
/// with no block to shrink, the Lanczos step itself, row by row (`RowResampler`).
enum RowSink {
    case shrink(BoxShrinker)
    case resample(RowResampler)
    /// Kept whole until an attention crop is placed on it (Lanczos then reads the crop's columns).
    case frame(FrameRows)

    func consume(rows: UnsafePointer<UInt8>, count: Int, rowStride: Int) {
        switch self {
        case let .shrink(shrinker): shrinker.consume(rows: rows, count: count, rowStride: rowStride)
        case let .resample(resampler): resampler.consume(rows: rows, count: count, rowStride: rowStride)
        case let .frame(frame): frame.consume(rows: rows, count: count, rowStride: rowStride)
        }
    }

    var frame: FrameRows? {
        if case let .frame(frame) = self { frame } else { nil }
    }

    var isComplete: Bool {
        switch self {
        case let .shrink(shrinker): shrinker.isComplete
        case let .resample(resampler): resampler.isComplete
        case let .frame(frame): frame.isComplete
        }
    }
}

/// CMYK to RGB without a profile, as Pillow and most viewers do it: (1 − C)(1 − K).
enum CMYKConversion {
    /// `inverted`: Adobe's APP14 files store 255 − ink.
    static func naive(_ cmyk: UnsafePointer<UInt8>, into rgb: UnsafeMutablePointer<UInt8>, pixelCount: Int, inverted: Bool) {
        for pixel in 0..<pixelCount {
            let at = pixel * 4
            var c = UInt32(cmyk[at]), m = UInt32(cmyk[at + 1]), y = UInt32(cmyk[at + 2]), k = UInt32(cmyk[at + 3])
            if !inverted { (c, m, y, k) = (255 - c, 255 - m, 255 - y, 255 - k) }
            rgb[pixel * 3] = UInt8((c * k + 127) / 255)
            rgb[pixel * 3 + 1] = UInt8((m * k + 127) / 255)
            rgb[pixel * 3 + 2] = UInt8((y * k + 127) / 255)
        }
    }
}

extension ThumbnailGeometry {
    /// Source pixels per output pixel along the less reduced axis (below 1 when enlarging).
    var reduction: Double {
        min(cropWidth / Double(outputWidth), cropHeight / Double(outputHeight))
    }
}
