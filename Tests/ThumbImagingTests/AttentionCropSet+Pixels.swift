import Foundation
@testable import ThumbImaging

/// A small deterministic generator (SplitMix64): the set must be the same on every run.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * Double(next() >> 11) / Double(1 << 53)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

extension AttentionCropSet {
    /// One muted colour, with a faint JPEG-visible noise so the background is not digitally flat.
    static func plain(width: Int, height: Int, random: inout SeededRandom) -> PixelBuffer {
        let colour = (0..<3).map { _ in UInt8(random.uniform(60, 200)) }
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for index in 0..<(width * height) {
            let noise = Int(random.next() % 5) - 2
            for channel in 0..<3 { bytes[index * 3 + channel] = UInt8(clamping: Int(colour[channel]) + noise) }
        }
        return PixelBuffer(width: width, height: height, channels: 3, bytes: bytes)
    }

    /// A photo stretched over the frame and blurred (three box passes each way, radius a 25th
    /// of the frame's short side: a portrait's out-of-focus background).
    static func blurred(_ photo: PixelBuffer, width: Int, height: Int, random: inout SeededRandom) -> PixelBuffer {
        var image = resized(photo, source: CropRectangle(x: 0, y: 0, width: Double(photo.width), height: Double(photo.height)),
                            width: width, height: height)
        let radius = min(width, height) / 25
        for _ in 0..<3 { image = boxBlur(image, radius: radius, horizontal: true); image = boxBlur(image, radius: radius, horizontal: false) }
        return image
    }

    /// The most detailed of a few random patches of `photo` (the sum of its neighbour
    /// differences), resized to `width` × `height`.
    static func detailedPatch(_ photo: PixelBuffer, width: Int, height: Int, random: inout SeededRandom) -> PixelBuffer {
        var best: (PixelBuffer, Double)?
        for _ in 0..<6 {
            let scale = random.uniform(1, 1.8)
            let w = min(Double(photo.width), Double(width) * scale), h = min(Double(photo.height), Double(height) * scale)
            let box = CropRectangle(x: random.uniform(0, Double(photo.width) - w), y: random.uniform(0, Double(photo.height) - h),
                                    width: w, height: h)
            let patch = resized(photo, source: box, width: width, height: height)
            var detail = 0.0
            for y in 0..<(height - 1) {
                for x in 0..<(width - 1) {
                    let at = (y * width + x) * 3
                    detail += Double(abs(Int(patch.bytes[at]) - Int(patch.bytes[at + 3])))
                        + Double(abs(Int(patch.bytes[at + 1]) - Int(patch.bytes[at + width * 3 + 1])))
                }
            }
            if detail > best?.1 ?? -1 { best = (patch, detail) }
        }
        return best!.0
    }

    /// Bilinear resize of `source` (a rectangle of `image`) to `width` × `height`, RGB.
    static func resized(_ image: PixelBuffer, source: CropRectangle, width: Int, height: Int) -> PixelBuffer {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            let sy = min(max(source.y + (Double(y) + 0.5) * source.height / Double(height) - 0.5, 0), Double(image.height - 1))
            let y0 = Int(sy), y1 = min(y0 + 1, image.height - 1), fy = sy - Double(y0)
            for x in 0..<width {
                let sx = min(max(source.x + (Double(x) + 0.5) * source.width / Double(width) - 0.5, 0), Double(image.width - 1))
                let x0 = Int(sx), x1 = min(x0 + 1, image.width - 1), fx = sx - Double(x0)
                for c in 0..<3 {
                    func at(_ px: Int, _ py: Int) -> Double { Double(image.bytes[(py * image.width + px) * 3 + c]) }
                    let top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx, bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx
                    bytes[(y * width + x) * 3 + c] = UInt8((top * (1 - fy) + bottom * fy).rounded())
                }
            }
        }
        return PixelBuffer(width: width, height: height, channels: 3, bytes: bytes)
    }

    static func boxBlur(_ image: PixelBuffer, radius: Int, horizontal: Bool) -> PixelBuffer {
        var out = image
        let (lines, length) = horizontal ? (image.height, image.width) : (image.width, image.height)
        for line in 0..<lines {
            func index(_ i: Int) -> Int {
                let clamped = min(max(i, 0), length - 1)
                return (horizontal ? line * image.width + clamped : clamped * image.width + line) * 3
            }
            for c in 0..<3 {
                var sum = 0
                for i in -radius...radius { sum += Int(image.bytes[index(i) + c]) }
                for i in 0..<length {
                    out.bytes[index(i) + c] = UInt8(sum / (2 * radius + 1))
                    sum += Int(image.bytes[index(i + radius + 1) + c]) - Int(image.bytes[index(i - radius) + c])
                }
            }
        }
        return out
    }

    static func paste(_ patch: PixelBuffer, into image: inout PixelBuffer, x: Int, y: Int) {
        for row in 0..<patch.height where y + row >= 0 && y + row < image.height {
            for column in 0..<patch.width where x + column >= 0 && x + column < image.width {
                let from = (row * patch.width + column) * 3, to = ((y + row) * image.width + x + column) * 3
                for c in 0..<3 { image.bytes[to + c] = patch.bytes[from + c] }
            }
        }
    }
}
