import Foundation
import FuzzDoors
import Testing

/// Every crash a fuzz target found, minimised and kept in `Tests/FuzzRegressions/TARGET/`, replayed
/// through the same `FuzzDoor.run` the target calls. Each input runs in a child process (an exit
/// test), so a trap fails that one case, named by its file, instead of taking the suite down.
@Suite struct FuzzRegressionTests {
    /// Targets whose stored crashes still crash on this branch: each waits on a fix made on another
    /// branch, and its replay below is disabled until that fix is merged (then drop it from here and
    /// enable the test: `replaysWithoutCrashing` takes the target over).
    static let waiting: Set<FuzzDoor> = [.slotSpec, .kindConfig, .httpRequest, .prefetchBody, .jobLine, .redisFields]

    @Test(arguments: FuzzDoor.allCases.filter { !waiting.contains($0) }.flatMap(StoredInput.all))
    func replaysWithoutCrashing(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded slot values: SlotKind.pixelSize traps on Int(huge Double)"),
          arguments: StoredInput.all(.slotSpec))
    func slotSpecReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded kind config: a huge height reaches SlotKind.pixelSize's Int(Double), a huge scale ThumbConfig's Int(scale)"),
          arguments: StoredInput.all(.kindConfig))
    func kindConfigReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded slot values and tokens: an inline spec in the URL traps in SlotKind.pixelSize, a token of UInt64.max overflows"),
          arguments: StoredInput.all(.httpRequest))
    func httpRequestReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded prefetch body: an inline kind traps in SlotKind.pixelSize"),
          arguments: StoredInput.all(.prefetchBody))
    func prefetchBodyReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded job values: a job line's inline kind traps in SlotKind.pixelSize"),
          arguments: StoredInput.all(.jobLine))
    func jobLineReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    @Test(.disabled("waits on the bounded job values: a Redis job's inline kind traps in SlotKind.pixelSize"),
          arguments: StoredInput.all(.redisFields))
    func redisFieldsReplays(_ input: StoredInput) async throws {
        try await input.replay()
    }

    /// The folders hold nothing but inputs of known targets, and each waiting target has inputs.
    @Test func everyFolderIsATarget() throws {
        var isFolder: ObjCBool = false
        let folders = try FileManager.default.contentsOfDirectory(atPath: StoredInput.folder).filter {
            FileManager.default.fileExists(atPath: StoredInput.folder + "/" + $0, isDirectory: &isFolder) && isFolder.boolValue
        }
        for name in folders {
            #expect(FuzzDoor(rawValue: name) != nil, "Tests/FuzzRegressions/\(name) names no fuzz target")
        }
        for door in Self.waiting {
            #expect(!StoredInput.all(door).isEmpty, "\(door.rawValue) waits on a fix but has no stored crash")
        }
    }
}

/// One file of `Tests/FuzzRegressions/TARGET/`.
struct StoredInput: Sendable, CustomTestStringConvertible {
    /// Tests/FuzzRegressionTests/FuzzRegressionTests.swift → Tests/FuzzRegressions.
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzRegressions").path

    var door: FuzzDoor
    var name: String
    var testDescription: String { "\(door.rawValue)/\(name)" }

    static func all(_ door: FuzzDoor) -> [StoredInput] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + door.rawValue)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { StoredInput(door: door, name: $0) }
    }

    /// Runs the input through its door in a child process, which must exit normally.
    func replay() async throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.folder + "/" + testDescription)))
        let doorName = door.rawValue
        await #expect(processExitsWith: .success, "\(testDescription) crashes its door") { [doorName = doorName as String, bytes = bytes as [UInt8]] in
            FuzzDoor(rawValue: doorName)!.run(bytes)
        }
    }
}
