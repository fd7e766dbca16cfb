import Foundation
import Testing
import ThumbImaging
@testable import ThumbWorker

/// HEIF and AVIF decode in the real sandbox: libde265 and dav1d start threads (clone with
/// CLONE_THREAD, allowed) and nothing else the filter refuses; the worker's thumbnails equal the
/// in-process ones byte for byte.
@Suite(.serialized) struct WorkerHEIFTests {
    static let files = [
        "formats/heif/pillow_heif__RGB_8__128x128.heif", "formats/heif/pillow_heif__RGBA_12__128x128.heif",
        "formats/heif/pillow_heif__zPug_3.heic", "formats/heif/pillow_heif__xiaomi.heic",
        "formats/avif/libavif__sofa_grid1x5_420.avif", "formats/avif/pillow__transparency.avif",
        "formats/avif/libavif__fox.profile0.10bpc.yuv420.avif", "formats/avif/pillow__rot1mir1.avif",
        // The 200 MP photo's small kinds, from its embedded thumbnail.
        "formats/heif/pillow_heif__200MP.heic",
    ]

    @Test func heifAndAVIFRenderInTheSandboxAsInProcess() throws {
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters)
        defer { supervisor.shutdown() }
        for relative in Self.files {
            let path = WorkerFixture.corpusFile(relative)
            let expected = try WorkerFixture.inProcess(path).get()
            let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path), relative)
            #expect(answer.results.count == expected.count, "\(relative)")
            for (index, (result, local)) in zip(answer.results, expected).enumerated() {
                let thumbnail = try result.get()
                #expect(thumbnail.bytes == local.bytes, "\(relative) request \(index): bytes differ")
                #expect(thumbnail.width == local.width && thumbnail.height == local.height, "\(relative) request \(index)")
            }
        }
        #expect(counters.snapshot().totalRestarts == 0, "no worker died: \(counters.snapshot())")
    }

    /// AVIF output is encoded (aom) inside the sandbox too.
    @Test func avifIsEncodedInTheSandbox() throws {
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        var request = WorkerFixture.requests[0]
        request.encoder.format = .avif
        let path = WorkerFixture.corpusFile("formats/avif/libheif__example.avif")
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path, requests: [request]))
        let thumbnail = try #require(try answer.results.first?.get())
        let local = try #require(try WorkerFixture.inProcess(path, requests: [request]).get().first)
        #expect(thumbnail.format == .avif && thumbnail.bytes == local.bytes)
    }
}
