// What attention crops cost: render time of the sample photos with `crop` centre against
// attention, for contact-avatar@3x (48 pt circle fill) and a photo-grid cell (128 pt square fill,
// the item of a 3-column grid 390 pt wide), in one process, the two modes interleaved.
//
//   swift build -c release --product crop-bench && .build/release/crop-bench [--rounds 9] [--corpus DIR]
//
// Each round renders every photo once per kind and mode (the mode order alternates between
// rounds so neither always runs on a warm cache); a kind's time for a round is the sum over the
// photos. Prints the median round per kind and mode, and attention's added share. Render only
// (decode, shrink, crop, Lanczos, orientation, mask), no encode: the stricter denominator.
import Foundation
import ThumbImaging

var rounds = 9
var corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../shared/corpus/large-photos").standardized.path
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--rounds": rounds = arguments.next().flatMap { Int($0) }.map { max(1, min($0, 1000)) } ?? rounds
    case "--corpus": corpus = arguments.next() ?? corpus
    default:
        FileHandle.standardError.write(Data("usage: crop-bench [--rounds N] [--corpus DIR]\n".utf8))
        exit(64)
    }
}

let files = ((try? FileManager.default.contentsOfDirectory(atPath: corpus)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
guard !files.isEmpty else {
    FileHandle.standardError.write(Data("crop-bench: no .jpg in \(corpus)\n".utf8))
    exit(66)
}
let sources = files.map { name -> SourceBytes in
    guard let data = FileManager.default.contents(atPath: corpus + "/" + name) else { fatalError("cannot read \(name)") }
    return SourceBytes([UInt8](data))
}
let grid = GridLayout(columns: 3, containerWidth: 390, leadingInset: 0, trailingInset: 0, interItemSpacing: 2).itemWidth
let kinds = [
    (name: "contact-avatar@3x", kind: SlotKind(name: "contact-avatar", widthPoints: 48, heightPoints: 48, scales: [3],
                                                 mode: .fill, mask: .circle)),
    (name: "photo-grid@3x", kind: SlotKind(name: "photo-grid", widthPoints: grid, heightPoints: grid, scales: [3], mode: .fill)),
]
let modes: [SlotKind.CropMode] = [.centre, .attention]
let thumbnailer = Thumbnailer()

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

// [kind][mode] -> one sum a round
var sums = Array(repeating: Array(repeating: [Double](), count: modes.count), count: kinds.count)
for source in sources { _ = try thumbnailer.render(source, request: ThumbnailRequest(kind: kinds[0].kind, scale: 3)) }
for round in 0..<rounds {
    for (kindIndex, entry) in kinds.enumerated() {
        let order = round % 2 == 0 ? Array(modes.indices) : modes.indices.reversed()
        var totals = [Double](repeating: 0, count: modes.count)
        for source in sources {
            for modeIndex in order {
                var kind = entry.kind
                kind.crop = modes[modeIndex]
                totals[modeIndex] += try seconds { _ = try thumbnailer.render(source, request: ThumbnailRequest(kind: kind, scale: 3)) }
            }
        }
        for modeIndex in modes.indices { sums[kindIndex][modeIndex].append(totals[modeIndex]) }
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

print("crop-bench: \(files.count) photos from \(corpus), \(rounds) rounds, render only (no encode)")
print("| kind | centre ms/img | attention ms/img | attention/centre |")
print("|---|---|---|---|")
for (kindIndex, entry) in kinds.enumerated() {
    let centre = median(sums[kindIndex][0]) / Double(files.count) * 1000
    let attention = median(sums[kindIndex][1]) / Double(files.count) * 1000
    print("| \(entry.name) | \(String(format: "%.2f", centre)) | \(String(format: "%.2f", attention)) | "
          + "\(String(format: "%.4f", attention / centre)) (\(String(format: "%+.1f", (attention / centre - 1) * 100))%) |")
}
