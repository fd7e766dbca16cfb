import Foundation
@testable import FuzzDoors
import Testing

/// The worker doors' seeds (Fuzz/seeds/worker-*) are frames their decoders accept, so that the
/// fuzzer starts from deep inside the format; a change of the protocol that makes them stale fails here.
@Suite struct WorkerSeedTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/seeds").path

    static func frames(_ door: FuzzDoor) throws -> [(String, [UInt8])] {
        let folder = seeds + "/" + door.rawValue
        return try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { name in
            (name, try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))))
        }
    }

    @Test func answerSeedsAreAcceptedAnswers() throws {
        let frames = try Self.frames(.workerAnswer)
        #expect(frames.count >= 3)
        for (name, bytes) in frames { #expect(WorkerDoors.answer(bytes), "\(name)") }
    }

    @Test func renderSeedsAreAcceptedOrders() throws {
        let frames = try Self.frames(.workerRender)
        #expect(frames.count >= 3)
        for (name, bytes) in frames { #expect(WorkerDoors.render(bytes), "\(name)") }
    }
}
