import Foundation
import Testing
import ThumbImaging
import ThumbSystem
import ThumbTestSupport
@testable import ThumbWorker

/// Real corpus files rendered in the sandboxed worker equal the in-process render, byte for byte.
@Suite(.serialized) struct WorkerCorpusTests {
    /// Real JPEGs (EXIF orientation, CMYK, progressive, a large photo) and PNGs (alpha, palette,
    /// 16-bit, interlaced, ICC), three kinds of each from one decode.
    static let files = [
        "exif-orientation/Landscape_6.jpg", "exif-samples/Canon_40D.jpg", "libjpeg-turbo-testimages/testorig.jpg",
        "libjpeg-turbo-testimages/testimgari.jpg", "edge-cases/pillow/pil_sample_cmyk.jpg", "edge-cases/image-rs/images/jpg/progressive/cat.jpg",
        "large-photos/exif-samples__mobile_jolla.jpg", "pngsuite/basn6a08.png", "pngsuite/basi3p08.png", "pngsuite/basn0g16.png",
        "edge-cases/pillow/icc_profile.png", "libpng-testpngs/rgb-alpha-16-sRGB.png",
    ]

    @Test func corpusRendersEqualInProcess() throws {
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        for relative in Self.files {
            let path = WorkerFixture.corpusFile(relative)
            let expected = try WorkerFixture.inProcess(path).get()
            let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path), relative)
            #expect(answer.results.count == expected.count, "\(relative)")
            for (index, (result, local)) in zip(answer.results, expected).enumerated() {
                let thumbnail = try result.get()
                #expect(thumbnail.bytes == local.bytes, "\(relative) request \(index): bytes differ")
                #expect(thumbnail.format == local.format && thumbnail.width == local.width && thumbnail.height == local.height,
                        "\(relative) request \(index)")
                #expect(thumbnail.warning == local.warning, "\(relative) request \(index)")
            }
            #expect(answer.cpuSeconds > 0 && answer.cpuSeconds < 60, "\(relative): \(answer.cpuSeconds) s of CPU")
        }
    }

    /// Attention crops placed in the worker come back as placements, the same as in process; a
    /// request handed its placement is cropped there and places nothing.
    @Test func attentionPlacementsComeBackAsInProcess() throws {
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        var requests = WorkerFixture.requests
        requests[0].kind.crop = .attention
        requests[1].kind.crop = .attention
        let path = WorkerFixture.corpusFile("exif-orientation/Landscape_6.jpg")
        let source = try SourceBytes.read(path: path, maxBytes: 1 << 30)
        let local = try Thumbnailer().thumbnailSet(of: source, requests: requests, placeholder: .skip)
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path, requests: requests))
        #expect(answer.placements.count == 2 && answer.placements == local.placements)
        requests[0].placedCentre = answer.placements[0].centre
        let placed = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path, requests: requests))
        #expect(placed.placements == [answer.placements[1]])
        let (again, first) = (try placed.results[0].get().crop, try answer.results[0].get().crop)
        #expect(abs(again.x - first.x) < 0.5 && abs(again.y - first.y) < 0.5 && again.width == first.width, "\(again) against \(first)")
    }

    /// Files the manifest says must fail (a broken PNG, a broken JPEG, a dimension bomb): the
    /// same typed failure in the worker as in process.
    @Test(arguments: ["pngsuite/xc1n0g08.png", "edge-cases/jpeg-decoder/tests/crashtest/images/derive-huffman-codes-overflow.jpg",
                      "edge-cases/fuzzdb/lottapixel.jpg"])
    func brokenFileFailsAsInProcess(_ relative: String) throws {
        let row = try #require(try Self.manifest().first { $0.relativePath == relative }, "\(relative) is in manifest.tsv")
        #expect(row.expect.hasPrefix("expect-"), "the manifest says \(relative) must fail")
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        let path = WorkerFixture.corpusFile(relative)
        guard case .failure(let local) = try WorkerFixture.inProcess(path) else {
            throw TestFailure("\(relative) decodes in process")
        }
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path), relative)
        #expect(WorkerFixture.sharedFailure(answer) == .imaging(local))
    }

    /// Every file of the manifest, through one worker: the same thumbnails (byte for byte) or the
    /// same typed failure as in process, and the worker never dies (issue 9, requirement 3).
    @Test func wholeManifestMatchesInProcess() throws {
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters)
        defer { supervisor.shutdown() }
        let requests = [WorkerFixture.requests[0], WorkerFixture.requests[2]]
        var compared = 0
        for row in try Self.manifest() {
            let path = WorkerFixture.corpusFile(row.relativePath)
            let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path, requests: requests), row.relativePath)
            switch try WorkerFixture.inProcess(path, requests: requests) {
            case .success(let expected):
                let same = zip(answer.results, expected).allSatisfy { result, local in
                    guard let thumbnail = try? result.get() else { return false }
                    return thumbnail.bytes == local.bytes && thumbnail.warning == local.warning
                }
                #expect(same && answer.results.count == expected.count, "\(row.relativePath): the worker's thumbnails differ")
            case .failure(let error):
                #expect(WorkerFixture.sharedFailure(answer) == .imaging(error), "\(row.relativePath)")
            }
            compared += 1
        }
        #expect(compared > 600, "the manifest lists the corpus (\(compared) files)")
        #expect(counters.snapshot().totalRestarts == 0 && counters.snapshot().spawns == 1)
    }

    /// The rows of manifest.tsv whose files are there.
    static func manifest() throws -> [CorpusManifest.Row] {
        try CorpusManifest.jpegAndPNG().filter { FileManager.default.fileExists(atPath: $0.path) }
    }
}
