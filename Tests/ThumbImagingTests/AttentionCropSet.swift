import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// The generated set of proof 2 (issue 12): subjects with real detail (patches of the corpus's
/// photos) placed off-centre on plain or blurred backgrounds, landscape and portrait, written as
/// JPEG under $TMPDIR. Seeded, so every run makes the same 200 files.
struct AttentionCropSet {
    struct Sample {
        var path: String
        var width: Int
        var height: Int
        /// The subject's box, source pixels.
        var subject: CropRectangle
    }

    /// The avatar's circle covers the source's short side; the free axis is the long one.
    static let shortSidePixels = 600
    static let aspectRatios = [4.0 / 3, 3.0 / 2, 16.0 / 9, 2.0]
    /// The fair rule, applied to every cropper alike: this fraction of the subject's area lies
    /// inside the output's circle.
    static let insideFraction = 0.9

    let samples: [Sample]
    let scratch: ScratchDirectory

    /// Photos the subjects are cut from (and blurred backgrounds made of), about 900 px a side.
    static func photos() throws -> [PixelBuffer] {
        let names = ["exif-py__Xiaomi_Mi_9T_KeyError.jpg", "exif-samples__hdr_iphone_hdr_NO.jpg",
                     "exif-samples__mobile_HMD_Nokia_8.3_5G.jpg", "exif-samples__mobile_jolla.jpg",
                     "exif-samples__tests_30-type_error.jpg", "exif-samples__tests_42_IndexError.jpg",
                     "image-rs__scaledown_test.jpg", "libvips__ultra-hdr.jpg"].map { Paths.corpusFile("large-photos", $0) }
            + [Paths.corpusFile("exif-orientation", "Landscape_1.jpg"), Paths.corpusFile("exif-orientation", "Portrait_1.jpg")]
        let kind = SlotKind(name: "pool", widthPoints: 900, heightPoints: 900)
        return try names.map { path in
            try Thumbnailer().render(loadSource(path), request: ThumbnailRequest(kind: kind, scale: 1)).pixels.flattened()
        }
    }

    init(count: Int) throws {
        scratch = try ScratchDirectory("attention-set")
        let photos = try Self.photos()
        var random = SeededRandom(seed: 12)
        var samples: [Sample] = []
        while samples.count < count {
            let index = samples.count
            let aspect = Self.aspectRatios[random.below(Self.aspectRatios.count)]
            let short = Self.shortSidePixels, long = Int((Double(short) * aspect).rounded())
            let landscape = index % 2 == 0
            let (width, height) = landscape ? (long, short) : (short, long)
            var image = index % 4 < 2
                ? Self.plain(width: width, height: height, random: &random)
                : Self.blurred(photos[random.below(photos.count)], width: width, height: height, random: &random)
            let side = Double(short) * random.uniform(0.26, 0.40)
            let subjectAspect = random.uniform(0.8, 1.25)
            let subjectWidth = Int(side * subjectAspect.squareRoot()), subjectHeight = Int(side / subjectAspect.squareRoot())
            // Off-centre along the free axis: somewhere the centred circle misses, the best one keeps.
            var placement: CropRectangle?
            for _ in 0..<200 {
                let along = random.uniform(0, Double(long - (landscape ? subjectWidth : subjectHeight)))
                let across = Double(short) / 2 + Double(short) * random.uniform(-0.1, 0.1)
                    - Double(landscape ? subjectHeight : subjectWidth) / 2
                let box = landscape
                    ? CropRectangle(x: along, y: across, width: Double(subjectWidth), height: Double(subjectHeight))
                    : CropRectangle(x: across, y: along, width: Double(subjectWidth), height: Double(subjectHeight))
                let centred = Self.centredCrop(width: width, height: height)
                let best = Self.cropCentred(on: box, width: width, height: height)
                if !Self.isInside(box, crop: centred), Self.isInside(box, crop: best) { placement = box; break }
            }
            guard let box = placement else { continue }
            let patch = Self.detailedPatch(photos[random.below(photos.count)], width: subjectWidth, height: subjectHeight,
                                           random: &random)
            Self.paste(patch, into: &image, x: Int(box.x), y: Int(box.y))
            let subject = CropRectangle(x: Double(Int(box.x)), y: Double(Int(box.y)), width: box.width, height: box.height)
            var settings = EncoderSettings()
            settings.jpegQuality = 90
            let bytes = try ImageEncoder.encode(image, as: .jpeg, settings: settings)
            let path = scratch.path(String(format: "subject-%03d.jpg", index))
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            samples.append(Sample(path: path, width: width, height: height, subject: subject))
        }
        self.samples = samples
    }

    func remove() { scratch.remove() }

    /// The crop a square fill takes of a `width` × `height` source: the short side, centred.
    static func centredCrop(width: Int, height: Int) -> CropRectangle {
        let side = Double(min(width, height))
        return CropRectangle(x: (Double(width) - side) / 2, y: (Double(height) - side) / 2, width: side, height: side)
    }

    /// The square crop whose centre is nearest the box's.
    static func cropCentred(on box: CropRectangle, width: Int, height: Int) -> CropRectangle {
        let side = Double(min(width, height))
        let x = min(max(box.x + box.width / 2 - side / 2, 0), Double(width) - side)
        let y = min(max(box.y + box.height / 2 - side / 2, 0), Double(height) - side)
        return CropRectangle(x: x, y: y, width: side, height: side)
    }

    /// The fraction of `box` inside the circle inscribed in `crop` (sampled on a 32 × 32 grid),
    /// and whether it meets `insideFraction`.
    static func insideShare(_ box: CropRectangle, crop: CropRectangle) -> Double {
        let cx = crop.x + crop.width / 2, cy = crop.y + crop.height / 2, r = min(crop.width, crop.height) / 2
        var inside = 0
        for j in 0..<32 {
            for i in 0..<32 {
                let x = box.x + (Double(i) + 0.5) / 32 * box.width, y = box.y + (Double(j) + 0.5) / 32 * box.height
                if (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r { inside += 1 }
            }
        }
        return Double(inside) / 1024
    }

    static func isInside(_ box: CropRectangle, crop: CropRectangle) -> Bool { insideShare(box, crop: crop) >= insideFraction }
}
