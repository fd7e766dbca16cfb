extension TIFFLoader {
    /// Where a directory is: in the main chain (a pyramid as libvips and most tools write it,
    /// NewSubfileType 1) or a SubIFD of the first page (libvips' `--subifd`, DNG, OME-TIFF).
    enum PageLocation: Equatable {
        case chain(index: Int)
        case subDirectory(offset: UInt64)
    }

    /// The page `load` decodes, made current in libtiff: the smallest reduced-resolution copy of
    /// the first page that is at least the output's size (`stored / outputShrink`) and keeps the
    /// plan's margin (`stored / maxShrink`), else the largest at least the output's size, else
    /// the first page — the rule of HEIF's embedded thumbnails (`HEIFLoader.chooseImage`), and
    /// with it the same 1% aspect tolerance (a level rounded to a few pixels is not a copy).
    func choosePage(maxShrink: Double, outputShrink: Double) throws(ImagingError) -> (TIFFDirectory, DecodedImage) {
        guard outputShrink > 1 else {
            try file.select(directory: 0)
            return (first, .firstPage)
        }
        let candidates = reducedPages().filter { page, _ in serves(page, outputShrink) }
        let withMargin = candidates.filter { page, _ in serves(page, maxShrink) }
        let area = { (candidate: (TIFFDirectory, PageLocation)) in candidate.0.width * candidate.0.height }
        guard let best = withMargin.min(by: { area($0) < area($1) }) ?? candidates.max(by: { area($0) < area($1) }) else {
            try file.select(directory: 0)
            return (first, .firstPage)
        }
        switch best.1 {
        case .chain(let index): try file.select(directory: index)
        case .subDirectory(let offset): try file.select(subDirectoryAt: offset)
        }
        return (best.0, .reducedPage(width: best.0.width, height: best.0.height))
    }

    private func serves(_ page: TIFFDirectory, _ shrink: Double) -> Bool {
        HEIFLoader.thumbnailServes(primaryWidth: storedWidth, primaryHeight: storedHeight, thumbnailWidth: page.width,
                                   thumbnailHeight: page.height, maxShrink: shrink)
    }

    /// The reduced-resolution copies of the first page that this loader can read as it reads
    /// the first page (same samples, orientation and route), within the limits.
    private func reducedPages() -> [(TIFFDirectory, PageLocation)] {
        var pages: [(TIFFDirectory, PageLocation)] = []
        func consider(_ location: PageLocation) {
            guard let page = try? file.info(), page.isReducedResolution, page.hasSamplesLike(first),
                  (try? limits.check(width: page.width, height: page.height)) != nil,
                  (try? Self.route(for: page)) == route,
                  (try? Self.checkCost(page, route: route, limits: limits)) != nil else { return }
            pages.append((page, location))
        }
        guard (try? file.select(directory: 0)) != nil else { return [] }
        if first.subDirectoryCount > 0 {
            for offset in file.subDirectoryOffsets(capacity: Self.maxDirectoriesSearched)
            where (try? file.select(subDirectoryAt: offset)) != nil {
                consider(.subDirectory(offset: offset))
            }
        }
        for index in 1..<Self.maxDirectoriesSearched {
            guard (try? file.select(directory: index)) != nil else { break }
            consider(.chain(index: index))
        }
        return pages
    }
}
