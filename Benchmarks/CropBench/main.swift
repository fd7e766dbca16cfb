// What the cell-aware work adds to a render (issue 12: under 3%): placeholders and attention
// crops against the centred crop without a placeholder (the render before issue 12), on the
// corpus's camera photos, for contact-avatar@3x (48 pt circle fill, PNG for its mask), a
// photo-grid cell (128 pt square fill, JPEG: the item of a 3-column grid 390 pt wide), and both
// avatar scales with the grid cell from one decode (what the watcher and batch do with a new
// asset), in one process, interleaved.
//
//   swift build -c release --product crop-bench && .build/release/crop-bench [--rounds 9] [--corpus DIR]
//   (--jobs 1 --variants 0,1: only those rows' renders, to profile them)
//
// A version's first decode computes its placeholder and places its attention crops (the whole
// frame decoded, the saliency map scored); the pipeline stores both, so every later render of
// that version is handed the placement (`ThumbnailRequest.placedCentre`) and decodes only the
// crop's columns, as a centred crop does. A first decode a client waits on computes the
// placeholder only if it reads the whole frame anyway (`PlaceholderDemand.ifWholeFrame`); one
// no client waits on (the watcher's, a batch's) always does. "attention, placed" is a later
// render; "attention, unplaced" a shape's first render on a version whose placeholder is known
// (once a shape a version). A render is what a worker does for a miss: decode, shrink, crop, Lanczos,
// orientation, mask, encode (`Thumbnailer.thumbnailSet`); "pixels only" stops before the encode
// (the stricter denominator). Each round renders every photo once per kind and variant, the
// variants' order rotating between rounds so none always runs on a warm cache; a variant's time
// is the sum over the photos of each one's fastest round.
import Foundation
import ThumbImaging

var rounds = 9
/// Only these jobs and variants (indices), for profiling one of them under `perf`.
var onlyJobs: Set<Int>?
var onlyVariants: Set<Int>?
var corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../shared/corpus/large-photos").standardized.path
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--rounds": rounds = arguments.next().flatMap { Int($0) }.map { max(1, min($0, 1000)) } ?? rounds
    case "--corpus": corpus = arguments.next() ?? corpus
    case "--jobs": onlyJobs = Set((arguments.next() ?? "").split(separator: ",").compactMap { Int($0) })
    case "--variants": onlyVariants = Set((arguments.next() ?? "").split(separator: ",").compactMap { Int($0) })
    default:
        FileHandle.standardError.write(Data("usage: crop-bench [--rounds N] [--corpus DIR] [--jobs I,J] [--variants I,J]\n".utf8))
        exit(64)
    }
}

let files = ((try? FileManager.default.contentsOfDirectory(atPath: corpus)) ?? []).filter { $0.hasSuffix(".jpg") }.sorted()
guard !files.isEmpty else {
    FileHandle.standardError.write(Data("crop-bench: no .jpg in \(corpus)\n".utf8))
    exit(66)
}
let sources = files.map { name -> SourceBytes in
    do { return try SourceBytes.read(path: corpus + "/" + name, maxBytes: 1 << 30) } catch { fatalError("cannot read \(name): \(error)") }
}
let grid = GridLayout(columns: 3, containerWidth: 390, leadingInset: 0, trailingInset: 0, interItemSpacing: 2).itemWidth
let avatar = SlotKind(name: "contact-avatar", widthPoints: 48, heightPoints: 48, scales: [2, 3], mode: .fill, mask: .circle)
let photoGrid = SlotKind(name: "photo-grid", widthPoints: grid, heightPoints: grid, scales: [3], mode: .fill)
/// What one render makes: a single thumbnail, or (as the watcher and batch pre-render a new
/// asset) several kinds from one decode.
let jobs: [(name: String, requests: [ThumbnailRequest])] = [
    ("contact-avatar@3x", [ThumbnailRequest(kind: avatar, scale: 3)]),
    ("photo-grid@3x", [ThumbnailRequest(kind: photoGrid, scale: 3)]),
    ("pre-render avatar@2x+@3x, grid@3x", [ThumbnailRequest(kind: avatar, scale: 2), ThumbnailRequest(kind: avatar, scale: 3),
                                           ThumbnailRequest(kind: photoGrid, scale: 3)]),
]

/// One way of rendering a kind; the first is every other's baseline.
struct Variant {
    let name: String
    let crop: SlotKind.CropMode
    let placeholder: PlaceholderDemand
    /// Handed the placement a first decode stored (a later render of the version).
    let placed: Bool
    let encodes: Bool
}
let variants = [
    Variant(name: "centre", crop: .centre, placeholder: .skip, placed: false, encodes: true),
    Variant(name: "client's first render: centre, placeholder if whole frame", crop: .centre, placeholder: .ifWholeFrame,
            placed: false, encodes: true),
    Variant(name: "client's first render: attention + placeholder if whole frame", crop: .attention, placeholder: .ifWholeFrame,
            placed: false, encodes: true),
    Variant(name: "background first decode: centre + placeholder", crop: .centre, placeholder: .always, placed: false, encodes: true),
    Variant(name: "background first decode: attention + placeholder", crop: .attention, placeholder: .always, placed: false,
            encodes: true),
    Variant(name: "later: attention, placed", crop: .attention, placeholder: .skip, placed: true, encodes: true),
    Variant(name: "attention, unplaced", crop: .attention, placeholder: .skip, placed: false, encodes: true),
    Variant(name: "centre, pixels only", crop: .centre, placeholder: .skip, placed: false, encodes: false),
    Variant(name: "attention placed, pixels only", crop: .attention, placeholder: .skip, placed: true, encodes: false),
]
let thumbnailer = Thumbnailer()

/// [job][photo]: where attention places each shape of the job, as the first decode stores it.
let placements: [[[AttentionPlacement]]] = jobs.enumerated().map { jobIndex, job in
    sources.map { source in
        guard onlyJobs?.contains(jobIndex) ?? true else { return [] }
        let requests = job.requests.map { request in
            var request = request
            request.kind.crop = .attention
            return request
        }
        return (try? thumbnailer.thumbnailSet(of: source, requests: requests, placeholder: .skip).placements) ?? []
    }
}

func render(_ source: SourceBytes, _ requests: [ThumbnailRequest], _ variant: Variant, placements: [AttentionPlacement]) throws {
    let requests = requests.map { request in
        var request = request
        request.kind.crop = variant.crop
        if variant.placed, let shape = request.placementShape {
            request.placedCentre = placements.first { $0.shape == shape }?.centre
        }
        return request
    }
    if variant.encodes {
        _ = try thumbnailer.thumbnailSet(of: source, requests: requests, placeholder: variant.placeholder)
    } else {
        for request in requests { _ = try thumbnailer.render(source, request: request) }
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

// [kind][variant][photo] -> the fastest of the rounds: on a shared machine the noise only ever
// adds time, so the minimum is the steadiest estimate of what the work itself costs.
var best = Array(repeating: Array(repeating: [Double](repeating: .infinity, count: sources.count), count: variants.count),
                 count: jobs.count)
for (sourceIndex, source) in sources.enumerated() {
    for (jobIndex, job) in jobs.enumerated() where onlyJobs?.contains(jobIndex) ?? true {
        let placed = placements[jobIndex][sourceIndex]
        // Every photo's every shape has room to move, or "placed" would measure centred crops.
        precondition(placed.count == Set(job.requests.compactMap { var r = $0; r.kind.crop = .attention; return r.placementShape }).count,
                     "\(files[sourceIndex]): attention placed \(placed.count) crops of \(job.name)")
        try render(source, job.requests, variants[0], placements: placed)
    }
}
for round in 0..<rounds {
    let order = variants.indices.map { (round + $0) % variants.count }
    for (kindIndex, job) in jobs.enumerated() {
        for (sourceIndex, source) in sources.enumerated() {
            for variantIndex in order {
                // Pixels without the encode exist for one thumbnail only (`render`).
                if !variants[variantIndex].encodes && job.requests.count > 1 { continue }
                if onlyJobs.map({ !$0.contains(kindIndex) }) ?? false || onlyVariants.map({ !$0.contains(variantIndex) }) ?? false { continue }
                let time = try seconds {
                    try render(source, job.requests, variants[variantIndex], placements: placements[kindIndex][sourceIndex])
                }
                best[kindIndex][variantIndex][sourceIndex] = min(best[kindIndex][variantIndex][sourceIndex], time)
            }
        }
    }
}

print("crop-bench: \(files.count) photos from \(corpus), \(rounds) rounds, ms an image (each photo's fastest round)")
print("| kind | variant | ms/img | against its baseline |")
print("|---|---|---|---|")
for (kindIndex, job) in jobs.enumerated() {
    for (variantIndex, variant) in variants.enumerated() where variant.encodes || job.requests.count == 1 {
        let time = best[kindIndex][variantIndex].reduce(0, +) / Double(files.count) * 1000
        guard time.isFinite else { continue } // a row --jobs or --variants left out
        // Pixels-only variants compare with centred pixels only, the others with the centred render.
        let baselineIndex = variant.encodes ? 0 : variants.firstIndex { !$0.encodes }!
        let baseline = best[kindIndex][baselineIndex].reduce(0, +) / Double(files.count) * 1000
        let against = variantIndex == baselineIndex ? "baseline"
            : baseline.isFinite ? String(format: "%+.1f%%", (time / baseline - 1) * 100) : "(baseline not run)"
        print("| \(job.name) | \(variant.name) | \(String(format: "%.2f", time)) | \(against) |")
    }
}
