import Foundation
import Testing
@testable import ThumbImaging
import ThumbTestSupport
@testable import ThumbWorker

/// A large TIFF decodes in the real sandbox from the descriptor it was passed (pread, and the
/// worker's own copy of the descriptor: the two calls the filter allows for it), its thumbnails
/// equal to the in-process ones byte for byte, and the worker stays up.
@Suite(.serialized) struct WorkerTIFFTests {
    @Test func largeTIFFRendersInTheSandboxFromItsFile() throws {
        let scratch = try ScratchDirectory("worker-tiff")
        defer { scratch.remove() }
        let photo = WorkerFixture.corpusFile("large-photos/exif-samples__mobile_HMD_Nokia_8.3_5G.jpg")
        var paths: [String] = []
        for (name, options) in [("lzw.tif", ["--compression", "lzw"]), ("tiles.tif", ["--tile", "--compression", "deflate"])] {
            let path = scratch.path(name)
            let made = try ChildProcess.run("/usr/bin/env", ["vips", "tiffsave", photo, path] + options, timeout: 300)
            try #require(made.exitCode == 0, "vips tiffsave: \(made.summary)")
            let source = try SourceBytes.read(path: path, maxBytes: 1 << 30)
            try #require(source.file != nil, "\(name) (\(source.count) bytes) is decoded from its file")
            paths.append(path)
        }
        let counters = WorkerRestartCounters()
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: counters)
        defer { supervisor.shutdown() }
        for path in paths {
            let inMemory = SourceBytes(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
            let expected = try Thumbnailer().thumbnails(of: inMemory, requests: WorkerFixture.requests)
            let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path), path)
            #expect(answer.results.count == expected.count)
            for (index, (result, local)) in zip(answer.results, expected).enumerated() {
                let thumbnail = try result.get()
                #expect(thumbnail.bytes == local.bytes, "\(path) request \(index): bytes differ")
            }
        }
        #expect(counters.snapshot().totalRestarts == 0, "no worker died: \(counters.snapshot())")
    }
}
