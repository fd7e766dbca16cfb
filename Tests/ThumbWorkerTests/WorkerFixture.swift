import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
import ThumbSystem
@testable import ThumbWorker
#if canImport(Glibc)
import Glibc
#endif

/// The test worker, corpus files and the requests the worker tests render.
enum WorkerFixture {
    static let packageRoot = TestPaths.packageRoot
    static let corpus = TestPaths.corpus

    static func testWorkerExecutable() throws -> String {
        try TestPaths.builtExecutable("thumbd-test-worker")
    }

    /// 1 GiB of address space: the largest corpus photo decodes well within it.
    static let memoryLimitBytes = 1 << 30

    static func launch(memoryLimitBytes: Int = memoryLimitBytes) throws -> WorkerLaunch {
        WorkerLaunch(executablePath: try testWorkerExecutable(), arguments: [], memoryLimitBytes: memoryLimitBytes)
    }

    static let avatar = SlotKind(name: "avatar", widthPoints: 48, heightPoints: 48, scales: [2, 3], mode: .fill, mask: .circle)
    static let row = SlotKind(name: "row", widthPoints: 56, heightPoints: 40, scales: [3], mode: .fill, mask: .cornerRadius(points: 8),
                              pregenerate: true)
    static let large = SlotKind(name: "large", widthPoints: 256, heightPoints: 256)

    /// Several kinds of one source, as a batch asks them: one decode in either place.
    static let requests: [ThumbnailRequest] = {
        var png = EncoderSettings()
        png.format = .png
        var progressive = EncoderSettings()
        progressive.jpegProgressive = true
        progressive.jpegQuality = 70
        return [ThumbnailRequest(kind: avatar, scale: 3), ThumbnailRequest(kind: row, scale: 3, encoder: png),
                ThumbnailRequest(kind: large, scale: 1, encoder: progressive, appliesOrientation: false)]
    }()

    /// An open source file and its `fstat`, as the daemon's confined open gives them.
    final class OpenFile {
        let descriptor: Int32
        let status: FileStatus
        let path: String

        init(_ path: String) throws {
            self.path = path
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw TestFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
            status = try FileStatus.of(descriptor: descriptor, label: path).0
        }

        deinit { close(descriptor) }
    }

    static func corpusFile(_ relative: String) -> String { corpus + "/" + relative }

    /// A scratch file whose bytes order a fault of the test worker (`THUMBD-FAULT:<word>\n`).
    static func faultFile(_ word: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-fault-\(UUID().uuidString)").path
        try Data("THUMBD-FAULT:\(word)\n".utf8 + [UInt8](repeating: 0x20, count: 64)).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func render(_ supervisor: RenderWorkerSupervisor, _ path: String, requests: [ThumbnailRequest] = requests,
                       limits: ImageLimits = ImageLimits(), deadlineSeconds: Double = 30) throws -> WorkerOutcome {
        let file = try OpenFile(path)
        return supervisor.render(source: file.descriptor, status: file.status, label: path, requests: requests, limits: limits,
                                 tuning: ShrinkPlan.Tuning(), deadlineSeconds: deadlineSeconds)
    }

    /// The in-process render the worker must equal.
    static func inProcess(_ path: String, requests: [ThumbnailRequest] = requests,
                          limits: ImageLimits = ImageLimits()) throws -> Result<[Thumbnail], ImagingError> {
        let source = try SourceBytes.read(path: path, maxBytes: limits.maxFileBytes)
        return Result { () throws(ImagingError) in try Thumbnailer(limits: limits).thumbnails(of: source, requests: requests) }
    }

    /// The answer of a rendered outcome, or a test failure naming what happened instead.
    static func answer(_ outcome: WorkerOutcome, _ comment: String = "") throws -> WorkerAnswer {
        guard case .rendered(let answer) = outcome else { throw TestFailure("\(comment) expected an answer, got \(outcome)") }
        return answer
    }

    /// The one failure every request of `answer` has (a shared decode fails for all).
    static func sharedFailure(_ answer: WorkerAnswer) -> WorkerRenderFailure? {
        let failures = answer.results.compactMap { result -> WorkerRenderFailure? in
            if case .failure(let failure) = result { return failure }
            return nil
        }
        guard failures.count == answer.results.count, let first = failures.first, failures.allSatisfy({ $0 == first }) else { return nil }
        return first
    }

    /// Whether `pid` is gone: not even a zombie (kill gives ESRCH once it is reaped).
    static func isGone(_ pid: Int32) -> Bool { kill(pid, 0) == -1 && errno == ESRCH }

    /// Open descriptors of this process.
    static func openDescriptorCount() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
    }
}
