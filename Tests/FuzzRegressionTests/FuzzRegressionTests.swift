import Foundation
import FuzzDoors
import Testing

/// Every crash a fuzz target found, minimised and kept in `Tests/FuzzRegressions/TARGET/`, replayed
/// through the same `FuzzDoor.run` the target calls. Each input runs in a child process (an exit
/// test), so a trap fails that one case with its file name instead of taking the suite down.
@Suite struct FuzzRegressionTests {
    /// Tests/FuzzRegressionTests/FuzzRegressionTests.swift → the package root.
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzRegressions").path

    /// The stored inputs of one target, by file name (sorted, hidden files left out).
    static func inputs(_ door: FuzzDoor) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + door.rawValue)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }

    static func replay(_ door: FuzzDoor, _ name: String) async throws {
        let path = folder + "/" + door.rawValue + "/" + name
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let doorName = door.rawValue
        await #expect(processExitsWith: .success, "\(doorName)/\(name) still crashes") { [doorName, bytes] in
            FuzzDoor(rawValue: doorName)!.run(bytes)
        }
    }

    /// The folders hold nothing but inputs of known targets.
    @Test func everyFolderIsATarget() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.folder).filter { !$0.hasPrefix(".") }
        for name in folders { #expect(FuzzDoor(rawValue: name) != nil, "Tests/FuzzRegressions/\(name) names no fuzz target") }
    }
}
