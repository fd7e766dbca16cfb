import Testing
@testable import ThumbImaging

/// The circle mask: what it leaves of the colour under the alpha it cuts.
@Suite("Masks")
struct MaskTests {
    @Test("a circle keeps the colour where any alpha is left and zeroes it where none is")
    func circleZeroesHiddenColour() {
        let side = 24
        var image = PixelBuffer(width: side, height: side, channels: 3,
                                bytes: [UInt8]((0..<side * side).flatMap { _ in [200, 100, 50] as [UInt8] }))
        Mask.apply(.circle, pixelsPerPoint: 1, to: &image)
        #expect(image.channels == 4)
        var hidden = 0, partial = 0
        for index in 0..<side * side {
            let pixel = Array(image.bytes[index * 4..<index * 4 + 4])
            if pixel[3] == 0 {
                hidden += 1
                #expect(pixel == [0, 0, 0, 0], "pixel \(index)")
            } else {
                if pixel[3] < 255 { partial += 1 }
                #expect(Array(pixel[0..<3]) == [200, 100, 50], "pixel \(index)")
            }
        }
        // The corners outside the circle (about 1 - π/4 of the square) and an anti-aliased rim.
        #expect(hidden > side * side / 8 && partial > 0)
        #expect(Array(image.bytes[0..<4]) == [0, 0, 0, 0])
    }
}
