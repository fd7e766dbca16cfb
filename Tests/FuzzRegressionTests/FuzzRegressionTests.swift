import Foundation
import FuzzDoors
import Testing

/// Every crash a fuzz target found, minimised and kept in `Tests/FuzzRegressions/TARGET/`, replayed
/// through the same `FuzzDoor.run` the target calls. Each input runs in a child process (an exit
/// test), so a trap fails that one case, named by its file, instead of taking the suite down.
@Suite struct FuzzRegressionTests {
    @Test(arguments: FuzzDoor.allCases.flatMap(StoredInput.all))
    func replaysWithoutCrashing(_ input: StoredInput) async throws {
        try await input.replay()
    }

    /// The folders hold nothing but inputs of known targets, and every crash found is kept.
    @Test func everyFolderIsATarget() throws {
        var isFolder: ObjCBool = false
        let folders = try FileManager.default.contentsOfDirectory(atPath: StoredInput.folder).filter {
            FileManager.default.fileExists(atPath: StoredInput.folder + "/" + $0, isDirectory: &isFolder) && isFolder.boolValue
        }
        for name in folders {
            #expect(FuzzDoor(rawValue: name) != nil, "Tests/FuzzRegressions/\(name) names no fuzz target")
        }
        #expect(FuzzDoor.allCases.flatMap(StoredInput.all).count >= 6, "the crashes found so far are all kept")
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
