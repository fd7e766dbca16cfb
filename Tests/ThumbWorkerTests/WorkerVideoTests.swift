import Foundation
import Testing
import ThumbImaging
import ThumbSystem
import ThumbTestSupport
@testable import ThumbWorker

/// The media corpus's videos (`media-manifest.tsv`, set `media/video`) through one sandboxed
/// worker (issue 38, requirement 1): every OK clip renders at its display aspect (the display
/// matrix honoured), no poster is black or blank unless the clip is, every ERROR clip is refused
/// with a message, the same as in process, and the worker never dies.
@Suite(.serialized) struct WorkerVideoTests {
    static func videos() throws -> [CorpusManifest.Row] {
        try CorpusManifest.media().filter { $0.set == "media/video" }
    }

    static let fit = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)
    static let requests: [ThumbnailRequest] = {
        var png = EncoderSettings()
        png.format = .png
        return [ThumbnailRequest(kind: fit, scale: 1, encoder: png), ThumbnailRequest(kind: WorkerFixture.avatar, scale: 2)]
    }()

    @Test func theVideoCorpusIsThere() throws {
        let rows = try Self.videos()
        #expect(rows.count == 24 && rows.filter { $0.status == "OK" }.count == 18 && rows.filter { $0.status == "ERROR" }.count == 6)
        #expect(rows.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
    }

    @Test func everyClipThroughTheWorker() throws {
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch().loadingVideo(), counters: counters)
        defer { supervisor.shutdown() }
        var rendered = 0, refused = 0
        for row in try Self.videos() {
            let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, row.path, requests: Self.requests), row.file)
            let source = try SourceBytes.read(path: row.path, maxBytes: 1 << 30)
            let local = Result { () throws(ImagingError) in
                try Thumbnailer(decodesSandboxOnlyFormats: true).thumbnails(of: source, requests: Self.requests)
            }
            switch row.status {
            case "OK":
                let poster = try #require(try? answer.results[0].get(), "\(row.file): \(answer.results[0])")
                let expected = try #require(try? local.get(), "\(row.file) in process: \(local)")
                #expect(poster.bytes == expected[0].bytes, "\(row.file): the worker's poster differs from the in-process one")
                // The display aspect: the manifest's size fitted into 256 × 256.
                let (width, height) = (try #require(row.width), try #require(row.height))
                let scale = 256 / Double(max(width, height))
                #expect(abs(poster.width - Int((Double(width) * scale).rounded())) <= 1
                        && abs(poster.height - Int((Double(height) * scale).rounded())) <= 1,
                        "\(row.file): \(poster.width)x\(poster.height) for a \(row.dims) display")
                #expect((try? answer.results[1].get())?.width == 96, "\(row.file): the avatar")
                let looks = Self.looks(poster)
                if row.expect.contains("uniformly dark thumbnail is correct") {
                    #expect(looks.mean < 20, "\(row.file): all its frames are black")
                } else {
                    #expect(looks.deviation >= 10 && looks.mean >= 20, "\(row.file): the poster is black or blank (\(looks))")
                }
                rendered += 1
            default:
                let failure = try #require(WorkerFixture.sharedFailure(answer), "\(row.file) must be refused: \(answer.results)")
                guard case .imaging(let error) = failure else { throw TestFailure("\(row.file): \(failure)") }
                switch error {
                case .unsupportedFormat(let reason), .undecodable(let reason), .tooLarge(let reason):
                    #expect(!reason.isEmpty)
                    // A refusal the manifest quotes ("unsupported codec") is said in those words.
                    if let quoted = row.expect.firstMatch(of: /"([^"]+)"/) {
                        #expect(reason.contains(quoted.1), "\(row.file): \(reason)")
                    }
                default:
                    Issue.record("\(row.file): refused as \(error)")
                }
                guard case .failure(let inProcess) = local else { throw TestFailure("\(row.file) renders in process") }
                #expect(failure == .imaging(inProcess), "\(row.file)")
                refused += 1
            }
        }
        #expect(rendered == 18 && refused == 6)
        #expect(counters.snapshot().totalRestarts == 0 && counters.snapshot().spawns == 1, "no worker died: \(counters.snapshot())")
    }

    /// Only a video worker maps FFmpeg: a still worker (the daemon's first, and the only one
    /// until a video comes) refuses a video in words and has no FFmpeg library in its memory.
    @Test func onlyAVideoWorkerMapsFFmpeg() throws {
        let clip = try #require(try Self.videos().first { $0.file == "androidx__sample.mp4" }).path
        let still = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        let video = RenderWorkerSupervisor(launch: try WorkerFixture.launch().loadingVideo(), counters: WorkerRestartCounters())
        defer {
            still.shutdown()
            video.shutdown()
        }
        let refused = try WorkerFixture.answer(try WorkerFixture.render(still, clip, requests: Self.requests))
        guard case .imaging(.unsupportedFormat(let reason))? = WorkerFixture.sharedFailure(refused) else {
            throw TestFailure("a still worker decoded a video: \(refused.results)")
        }
        #expect(reason.contains("stills only"), "\(reason)")
        #expect(try WorkerFixture.answer(try WorkerFixture.render(video, clip, requests: Self.requests)).results.allSatisfy { (try? $0.get()) != nil })
        // A worker is not dumpable (its /proc maps are closed to us): its address space tells.
        // FFmpeg's libraries are ~190 MB of it (CThumbVideo/ffmpeg.c); a still worker's is less by that.
        func addressSpaceKB(_ supervisor: RenderWorkerSupervisor) throws -> Int {
            let pid = try #require(supervisor.currentPID)
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            return try #require(status.firstMatch(of: /VmSize:\s+(\d+) kB/).flatMap { Int($0.1) })
        }
        let (stillKB, videoKB) = (try addressSpaceKB(still), try addressSpaceKB(video))
        #expect(videoKB - stillKB > 100_000, "still worker \(stillKB) kB, video worker \(videoKB) kB")
    }

    /// Mean and deviation of the luma of a PNG thumbnail, decoded by thumbd's own reader.
    static func looks(_ thumbnail: Thumbnail) -> (mean: Double, deviation: Double) {
        let whole = SlotKind(name: "whole", widthPoints: 4096, heightPoints: 4096)
        guard let pixels = try? Thumbnailer().render(SourceBytes(thumbnail.bytes), request: ThumbnailRequest(kind: whole, scale: 1)).pixels else {
            return (0, 0)
        }
        var sum = 0.0, squares = 0.0
        let count = Double(pixels.width * pixels.height)
        for at in stride(from: 0, to: pixels.bytes.count, by: pixels.channels) {
            let luma = 0.2126 * Double(pixels.bytes[at]) + 0.7152 * Double(pixels.bytes[at + 1]) + 0.0722 * Double(pixels.bytes[at + 2])
            sum += luma
            squares += luma * luma
        }
        let mean = sum / count
        return (mean, max(0, squares / count - mean * mean).squareRoot())
    }
}
