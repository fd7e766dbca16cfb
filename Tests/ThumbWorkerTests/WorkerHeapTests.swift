import Foundation
import Testing
import ThumbTestSupport
import ThumbImaging
@testable import ThumbWorker

/// Issue 37, item 13: a worker renders asset after asset in one heap, so a decoder that hands
/// out memory it never wrote would show the previous asset's pixels. Every block malloc gives a
/// worker is filled (`WorkerLaunch.heapFillByte`), whatever the last render left in it.
@Suite(.serialized) struct WorkerHeapTests {
    @Test("after a real render, blocks of every size that the same worker takes from malloc hold none of its bytes")
    func aRenderLeavesNothingInTheNextOnesMemory() throws {
        let supervisor = RenderWorkerSupervisor(launch: try WorkerFixture.launch(), counters: WorkerRestartCounters())
        defer { supervisor.shutdown() }
        try supervisor.start()
        let pid = try #require(supervisor.currentPID)
        // Real pixels through the worker's heap: a large photo, decoded and shrunk three ways.
        let photo = try #require(try FileManager.default.contentsOfDirectory(atPath: WorkerFixture.corpusFile("large-photos"))
            .filter { $0.lowercased().hasSuffix(".jpg") }.sorted().first)
        let rendered = try WorkerFixture.answer(try WorkerFixture.render(supervisor, WorkerFixture.corpusFile("large-photos/" + photo)))
        #expect(rendered.results.allSatisfy { (try? $0.get()) != nil }, "\(rendered.results)")
        let path = try WorkerFixture.faultFile("heap-leftovers")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let answer = try WorkerFixture.answer(try WorkerFixture.render(supervisor, path))
        #expect(supervisor.currentPID == pid, "the same worker must take both renders")
        guard case .imaging(.undecodable(let reason)) = WorkerFixture.sharedFailure(answer) else { throw TestFailure("\(answer.results)") }
        let numbers = reason.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.count == 2 && numbers[1] > 1_000_000, "\(reason)")
        #expect(numbers.first == 0, "blocks handed out after a render hold its bytes: \(reason)")
    }

    @Test("the fill is in every worker's environment, whatever else a launch adds")
    func everyLaunchFillsTheHeap() {
        let launch = WorkerLaunch(executablePath: "/bin/true", arguments: [], memoryLimitBytes: 0, extraEnvironment: ["A=B"])
        #expect(launch.environment.contains("GLIBC_TUNABLES=glibc.malloc.perturb=165:glibc.malloc.tcache_count=0"), "\(launch.environment)")
    }
}
