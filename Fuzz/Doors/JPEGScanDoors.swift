import ThumbImaging

/// The scan selection of progressive JPEGs (`CThumb_JPEGKeepScans`, used at DCT scale 1/8): the
/// walk over the marker stream with several component masks (ASan: never outside the input), then
/// a differential check against the whole decode, whose failure is a finding (a trap): where the
/// selection skipped scans, the whole decode must not fail, and where it decodes without a
/// warning its pixels must be the selected decode's. (Damage inside a skipped scan may warn in the
/// whole decode only; those inputs are not compared.)
enum JPEGScanDoors {
    static let limits = ImageDoors.thumbnailer.limits

    static func dcScans(_ bytes: [UInt8]) {
        for mask: UInt32 in [0, 0b110, 0x3FF] {
            if let kept = JPEGScanSelection.keep(bytes, acComponents: mask, maxScans: limits.maxProgressiveScans),
               kept.stream.count + kept.skippedBytes != bytes.count || kept.headerBytes > kept.stream.count {
                fatalError("kept \(kept.stream.count) + skipped \(kept.skippedBytes) bytes of \(bytes.count)")
            }
        }
        let source = SourceBytes(bytes)
        guard let selected = try? JPEGScaledPixels.decode(source, scaleDenominator: 8, selectsScans: true, limits: limits),
              selected.skippedScanBytes > 0 else { return }
        let whole: JPEGScaledPixels
        do {
            whole = try JPEGScaledPixels.decode(source, scaleDenominator: 8, selectsScans: false, limits: limits)
        } catch {
            fatalError("the selected decode succeeded where the whole decode failed: \(error)")
        }
        if whole.warningCount == 0 && whole.pixels != selected.pixels {
            fatalError("the selected decode's pixels differ from the whole decode's (\(whole.width)x\(whole.height))")
        }
    }
}
