import CJXL

extension JXLLoader {
    /// The first displayed frame as 8-bit RGB(A), reduced by `reduction` × `reduction` blocks
    /// (partial at the right and bottom edges). An 8-bit decode at full size is handed over as
    /// libjxl wrote it, with no copy.
    ///
    /// Not libjxl's row callback (`JxlDecoderSetImageOutCallback`) to sum blocks without the
    /// full-size buffer: tried, it doubled the peak (213 MB against 100 MB for a 12 MP lossy
    /// file, 186 against 72 lossless), libjxl 0.7 then keeping frame-sized buffers of its own.
    ///
    /// SDR is asked of libjxl as 8 bits whatever the file's depth: libjxl rounds from its float
    /// (or 32-bit integer) samples, so a 12- or 16-bit file loses nothing a 16-bit decode rounded
    /// here would keep at full size, and the buffer is half as large.
    func decodeFirstFrame(reduction: Int, isCancelled: CancellationCheck?) throws(ImagingError) -> PixelBuffer {
        let channels = Int(pixelFormat.num_channels)
        let bytesPerSample = pixelFormat.data_type == JXL_TYPE_UINT16 ? 2 : 1
        // Within Int: the limits bounded the sides, and the decoder memory check this product.
        var samples = [UInt8](repeating: 0, count: storedWidth * storedHeight * channels * bytesPerSample)
        // withUnsafeMutableBytes rethrows untyped: the typed error is carried out by hand.
        let failure = samples.withUnsafeMutableBytes { buffer -> ImagingError? in
            do throws(ImagingError) {
                try decoder.decodeFirstFrame(into: buffer, format: pixelFormat, isCancelled: isCancelled)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        if isCancelled?() == true { throw .cancelled }
        if bytesPerSample == 1 && reduction <= 1 {
            return PixelBuffer(width: storedWidth, height: storedHeight, channels: channels, bytes: samples)
        }
        let reduced = samples.withUnsafeMutableBytes { raw -> PixelBuffer? in
            if bytesPerSample == 1 {
                return Self.reduce(raw.bindMemory(to: UInt8.self), width: storedWidth, height: storedHeight, channels: channels,
                                   factor: reduction, isCancelled: isCancelled)
            }
            let wide = raw.bindMemory(to: UInt16.self)
            if let hdrSignal {
                return Self.toneMapped(UnsafeBufferPointer(wide), signal: hdrSignal, width: storedWidth, height: storedHeight,
                                       channels: channels, factor: reduction, isCancelled: isCancelled)
            }
            return Self.reduce(wide, width: storedWidth, height: storedHeight, channels: channels, factor: reduction,
                               isCancelled: isCancelled)
        }
        guard let reduced else { throw .cancelled }
        return reduced
    }

    /// PQ or HLG samples (16-bit RGB(A), interleaved, straight alpha, in the file's own
    /// encoding: libjxl converted nothing) to 8-bit sRGB through `HDRToneMapper`, `factor` blocks
    /// averaged in linear light. nil when cancelled.
    static func toneMapped(_ samples: UnsafeBufferPointer<UInt16>, signal: HDRSignal, width: Int, height: Int, channels: Int,
                           factor: Int, isCancelled: CancellationCheck?) -> PixelBuffer? {
        let mapper = HDRToneMapper(signal, maximumCode: 65_535)
        let hasAlpha = channels == 4
        return mapper.toneMap(width: width, height: height, hasAlpha: hasAlpha, alphaMaximum: 65_535, reduction: factor,
                              isCancelled: isCancelled) { y, codes in
            let row = samples.baseAddress! + y * width * channels
            for x in 0..<width {
                let pixel = row + x * channels
                codes[x] = SIMD4(Int32(pixel[0]), Int32(pixel[1]), Int32(pixel[2]), hasAlpha ? Int32(pixel[3]) : 65_535)
            }
        }
    }

    /// Interleaved samples to 8-bit, averaged over `factor` × `factor` blocks (`BlockSums`). nil when cancelled.
    static func reduce<Sample: FixedWidthInteger & UnsignedInteger>(
        _ samples: UnsafeMutableBufferPointer<Sample>, width: Int, height: Int, channels: Int, factor: Int,
        isCancelled: CancellationCheck?
    ) -> PixelBuffer? {
        let factor = max(1, factor)
        let outputWidth = (width + factor - 1) / factor, outputHeight = (height + factor - 1) / factor
        let maximum = UInt64(Sample.max)
        let hasAlpha = channels == 4
        var output = [UInt8](repeating: 0, count: outputWidth * outputHeight * channels)
        // Per block: Σ colour (× alpha when there is alpha) and Σ alpha.
        var sums = [SIMD4<UInt64>](repeating: .zero, count: outputWidth)
        let cancelled = output.withUnsafeMutableBufferPointer { out in
            sums.withUnsafeMutableBufferPointer { sums in
                for outputY in 0..<outputHeight {
                    if outputY & 15 == 0, isCancelled?() == true { return true }
                    let top = outputY * factor, bottom = min(top + factor, height)
                    for index in 0..<outputWidth { sums[index] = .zero }
                    for y in top..<bottom {
                        var at = y * width * channels
                        for block in 0..<outputWidth {
                            var sum = sums[block]
                            for _ in (block * factor)..<min(block * factor + factor, width) {
                                let color = SIMD4(UInt64(samples[at]), UInt64(samples[at + 1]), UInt64(samples[at + 2]), 0)
                                if hasAlpha {
                                    let alpha = UInt64(samples[at + 3])
                                    sum &+= color &* SIMD4(repeating: alpha) &+ SIMD4(0, 0, 0, alpha)
                                } else {
                                    sum &+= color
                                }
                                at += channels
                            }
                            sums[block] = sum
                        }
                    }
                    // Rounded to the nearest of 255 levels.
                    BlockSums.storeRow(sums, rows: bottom - top, width: width, factor: factor, hasAlpha: hasAlpha,
                                       alphaMaximum: maximum, into: out, at: outputY * outputWidth * channels) { numerator, denominator in
                        UInt8(min(255, (numerator &* 255 &+ denominator &* maximum / 2) / (denominator &* maximum)))
                    }
                }
                return false
            }
        }
        if cancelled { return nil }
        return PixelBuffer(width: outputWidth, height: outputHeight, channels: channels, bytes: output)
    }
}
