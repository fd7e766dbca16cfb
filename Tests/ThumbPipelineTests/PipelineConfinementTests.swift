import Foundation
import Synchronization
import Testing
import ThumbImaging
@testable import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

/// What the worker reads is what the kernel let it open beneath the root, at the moment it
/// reads: a symlink or a FIFO swapped in after the request was resolved changes nothing.
@Suite("pipeline: confined reads")
final class PipelineConfinementTests {
    let fixture: PipelineFixture

    init() throws {
        fixture = try PipelineFixture()
    }

    /// Issue 8 item 5. A landscape JPEG inside the root and a portrait one outside; a thread
    /// swaps `swap.jpg` between the inside file and a symlink to the outside one (each by an
    /// atomic rename) while 600 requests, each for a kind of its own (so every one renders),
    /// run. Before, the check and the open were two steps and some answers carried the
    /// outside image; now none may.
    @Test("a file swapped with a symlink out of the root never serves the outside file")
    func swappedSymlinkNeverServesOutsideBytes() async throws {
        let inside = fixture.assets + "/keep.jpg"
        let outside = fixture.root + "/outside.jpg"
        try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/exif-orientation/Landscape_1.jpg", toPath: inside)
        try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/exif-orientation/Landscape_1.jpg", toPath: fixture.assets + "/swap.jpg")
        // A portrait image: its thumbnails are taller than wide.
        try FileManager.default.copyItem(atPath: PipelineFixture.corpus + "/exif-orientation/Portrait_1.jpg", toPath: outside)
        let pipeline = try fixture.pipeline { $0.memoryCacheBytes = 0 }
        defer { pipeline.shutdown() }

        let stop = Counter()
        let swaps = Counter()
        let assets = fixture.assets
        let swapper = Thread {
            while stop.value == 0 {
                _ = symlink(outside, assets + "/.swap-link")
                _ = rename(assets + "/.swap-link", assets + "/swap.jpg")
                _ = link(inside, assets + "/.swap-file")
                _ = rename(assets + "/.swap-file", assets + "/swap.jpg")
                swaps.add()
            }
        }
        swapper.start()
        var served = 0, refused = 0, outsideAnswers = 0
        for batch in 0..<30 {
            let log = AnswerLog()
            for index in 0..<20 {
                let side = 24 + batch * 20 + index
                let kind = SlotKind(name: "k\(side)", widthPoints: Double(side), heightPoints: Double(side))
                pipeline.submit(PipelineRequest(assetPath: "swap.jpg", kind: kind, scale: 1), completion: log.completion("\(index)"))
            }
            await log.wait(for: 20)
            for (_, response) in log.all {
                if let thumbnail = response.thumbnail {
                    served += 1
                    if thumbnail.height > thumbnail.width { outsideAnswers += 1 }
                } else {
                    refused += 1
                }
            }
        }
        stop.add()
        while !swapper.isFinished { try await Task.sleep(for: .milliseconds(5)) }
        #expect(served + refused == 600)
        #expect(outsideAnswers == 0, "\(outsideAnswers) of \(served) answers carried the file outside the root")
        #expect(served > 0 && swaps.value > 100, "served \(served), swaps \(swaps.value)")
    }

    /// Issue 8 item 6. The request is resolved while the asset is a regular file and queued;
    /// then a FIFO takes its name. Before, the worker's open blocked for good (and shutdown with
    /// it); now the open does not block, fstat refuses the FIFO, and shutdown completes.
    @Test("a FIFO swapped in after the request was resolved is refused at once; shutdown completes")
    func fifoSwappedInIsRefusedPromptly() async throws {
        let pipeline = try fixture.pipeline(paused: true) { $0.workers = 1 }
        let log = AnswerLog()
        pipeline.submit(PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1), completion: log.completion("fifo"))
        let fifo = fixture.assets + "/img0.jpg"
        #expect(unlink(fifo) == 0 && mkfifo(fifo, 0o644) == 0)
        // Whatever happens, unblock a reader stuck in open() so this test process can finish.
        defer {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
        }
        try pipeline.startWorkers()
        await log.wait(for: 1)
        #expect(log.response("fifo")?.error == .forbidden(path: "img0.jpg", reason: "not a regular file"),
                "\(String(describing: log.response("fifo")?.result))")
        let stopped = Counter()
        Thread {
            pipeline.shutdown()
            stopped.add()
        }.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while stopped.value == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stopped.value == 1, "shutdown did not complete")
    }

    /// Issue 8 item 14 (EACCES vs a file written while read): a file that changes between the
    /// open and the end of the read is read once more; one that keeps changing is
    /// `assetChanging` (503 with Retry-After at the API), not `forbidden`.
    @Test("a file written while it is read is retried once, then answered assetChanging")
    func changedWhileReadingIsRetriedThenTransient() async throws {
        let appendings = Counter()
        let limit = Counter(1)
        let assets = fixture.assets
        let pipeline = try ThumbnailPipeline(configuration: fixture.configuration(), startsWorkers: true,
                                             opener: { root in OpenObservingRoot(root: root) { version in
            guard appendings.value < limit.value else { return }
            appendings.add()
            // Bytes after the JPEG's end marker: the image still decodes, but it is not the file fstat saw.
            let handle = FileHandle(forWritingAtPath: assets + "/" + version.path)
            handle?.seekToEndOfFile()
            handle?.write(Data(repeating: 0, count: 1000))
            try? handle?.close()
        } })
        defer { pipeline.shutdown() }

        let once = await pipeline.thumbnail(PipelineRequest(assetPath: "img0.jpg", kind: PipelineFixture.large, scale: 1))
        #expect(once.thumbnail != nil, "one change: the second read succeeds (\(once.result))")
        #expect(appendings.value == 1)
        // Keyed by what was read the second time: the grown file.
        let grown = try FileManager.default.attributesOfItem(atPath: assets + "/img0.jpg")[.size] as? Int
        #expect(once.thumbnail?.key.descriptor.contains("img0.jpg|\(grown ?? -1)|") == true)

        limit.add(99)
        let always = await pipeline.thumbnail(PipelineRequest(assetPath: "img1.jpg", kind: PipelineFixture.large, scale: 1))
        guard case .assetChanging(let path, let reason)? = always.error else {
            Issue.record("expected assetChanging, got \(always.result)")
            return
        }
        #expect(path == "img1.jpg" && reason.contains("grew while being read"), "\(reason)")
        #expect(appendings.value == 3, "read twice, not more")
    }
}

/// A counter shared with threads and closures.
final class Counter: Sendable {
    private let count: Atomic<Int>
    init(_ initial: Int = 0) { count = Atomic(initial) }
    var value: Int { count.load(ordering: .acquiring) }
    func add(_ amount: Int = 1) { count.add(amount, ordering: .acquiringAndReleasing) }
}
